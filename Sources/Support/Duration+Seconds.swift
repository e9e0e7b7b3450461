extension Duration {
  /// The duration in seconds as a floating-point number.
  public var seconds: Double {
    let (whole, fraction) = components
    return Double(whole) + Double(fraction) * 1e-18
  }

  /// The duration in whole nanoseconds (attoseconds below one are dropped).
  public var nanoseconds: Int64 {
    let (seconds, attoseconds) = components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
  }
}
