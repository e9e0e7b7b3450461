public enum SlimplayVersion { public static let string = "0.1.0" }
