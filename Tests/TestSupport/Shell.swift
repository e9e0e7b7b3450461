#if canImport(Glibc)
  import Glibc
#endif

/// Runs `command` with /bin/sh (the tests' encoders and tools: sox, flac, lame, ...); returns its
/// exit status, or -1 if it could not run or was killed.
@discardableResult
public func shell(_ command: String) -> Int32 {
  let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
  let arguments = ["/bin/sh", "-c", command]
  let environment = ["PATH=" + path, "HOME=/tmp", "LC_ALL=C"]
  var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
  var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
  defer {
    for p in argv { free(p) }
    for p in envp { free(p) }
  }
  var pid: pid_t = 0
  guard posix_spawn(&pid, "/bin/sh", nil, nil, &argv, &envp) == 0 else { return -1 }
  var status: Int32 = 0
  while waitpid(pid, &status, 0) < 0 {
    if errno != EINTR { return -1 }
  }
  return status & 0x7F == 0 ? (status >> 8) & 0xFF : -1
}
