/// The cache's entries by key, held in one array sorted by key: a dictionary of thousands of
/// entries holds twice the room (its table is a power of two, at most three quarters full), and
/// this is what an idle player with a large cache keeps. Lookups are a binary search; an insertion
/// or removal moves the entries after it, a few hundred kilobytes at most, once a download.
struct CacheEntries {
  private(set) var values: [CacheEntry] = []

  init() {}

  /// From entries in any order; of two with the same key, the later one stays.
  init(_ unsorted: [CacheEntry]) {
    values.reserveCapacity(unsorted.count)
    for entry in unsorted.enumerated().sorted(by: { ($0.element.key.raw, $0.offset) < ($1.element.key.raw, $1.offset) })
    {
      if values.last?.key == entry.element.key {
        values[values.count - 1] = entry.element
      } else {
        values.append(entry.element)
      }
    }
  }

  var count: Int { values.count }
  var keys: some Sequence<CacheKey> { values.lazy.map(\.key) }

  /// Where `key` is, or where it would go.
  private func place(of key: CacheKey) -> (index: Int, found: Bool) {
    var low = 0
    var high = values.count
    while low < high {
      let middle = (low + high) / 2
      if values[middle].key.raw < key.raw { low = middle + 1 } else { high = middle }
    }
    return (low, low < values.count && values[low].key == key)
  }

  subscript(key: CacheKey) -> CacheEntry? {
    get {
      let place = place(of: key)
      return place.found ? values[place.index] : nil
    }
    set {
      let place = place(of: key)
      switch (newValue, place.found) {
      case (let entry?, true): values[place.index] = entry
      case (let entry?, false): values.insert(entry, at: place.index)
      case (nil, true): values.remove(at: place.index)
      case (nil, false): break
      }
    }
  }

  @discardableResult
  mutating func removeValue(forKey key: CacheKey) -> CacheEntry? {
    defer { self[key] = nil }
    return self[key]
  }
}
