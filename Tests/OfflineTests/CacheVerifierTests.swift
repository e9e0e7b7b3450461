import Support
import TestSupport
import Testing

@testable import Offline

#if canImport(Glibc)
  import Glibc
#endif

/// Runs `command` in `folder`; true when it exits 0.
private func run(_ command: String, in folder: String) -> Bool {
  shell("cd '\(folder)' && " + command) == 0
}

private func temporaryFolder() -> String { TemporaryDirectory().path }

/// Real files from Debian's encoders, checked as a finished download is. Each test has a folder
/// of its own, removed with it.
@Suite final class CacheVerifierTests {
  private let folder = temporaryFolder()

  deinit { shell("rm -rf '\(folder)'") }

  private func flac(seconds: Double = 1, pictureBytes: Int = 0) -> String {
    #expect(run("sox -n -r 96000 -c 2 -b 24 x.wav synth \(seconds) sine 440 pinknoise vol 0.3", in: folder))
    #expect(run("flac -s -f -o x.flac x.wav", in: folder))
    if pictureBytes > 0 {
      #expect(run("head -c \(pictureBytes) /dev/urandom > cover.jpg", in: folder))
      #expect(run("metaflac --import-picture-from='3|image/jpeg||600x600x24|cover.jpg' x.flac", in: folder))
    }
    return folder + "/x.flac"
  }

  @Test func aFLACFilePasses() {
    #expect(CacheVerifier.decodes(path: flac(), codec: .flac))
  }

  /// Cover art far larger than the verifier's window (and than its old whole-file probe) sits in
  /// front of the first audio frame: the metadata is read through, a window at a time.
  @Test func aFLACFileWithLargeCoverArtPasses() {
    let path = flac(pictureBytes: 1_500_000)
    #expect(CacheVerifier.decodes(path: path, codec: .flac))
  }

  @Test func anMP3FilePasses() {
    #expect(run("sox -n -r 44100 -c 2 -b 16 x.wav synth 1 sine 440 vol 0.3", in: folder))
    #expect(run("lame --quiet -b 192 x.wav x.mp3", in: folder))
    #expect(CacheVerifier.decodes(path: folder + "/x.mp3", codec: .mp3))
  }

  @Test func noiseIsNotAudio() {
    #expect(run("head -c 300000 /dev/urandom > noise.flac", in: folder))
    #expect(!CacheVerifier.decodes(path: folder + "/noise.flac", codec: .flac))
  }

  /// A download cut inside the metadata has no frame to find.
  @Test func aFileCutBeforeItsFirstFrameIsNotAudio() {
    _ = flac(pictureBytes: 200_000)
    #expect(run("head -c 100000 x.flac > cut.flac", in: folder))
    #expect(!CacheVerifier.decodes(path: folder + "/cut.flac", codec: .flac))
  }

  @Test func aMissingFileIsNotAudio() {
    #expect(!CacheVerifier.decodes(path: folder + "/absent.flac", codec: .flac))
  }
}
