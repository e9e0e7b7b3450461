import AudioOutput
import Testing

@Suite("Hardware volume: LMS gain to mixer settings")
struct MixerTests {
  let decibels = ALSAMixer.Scale.decibels(minimum: -10239, maximum: 400)
  let raw = ALSAMixer.Scale.raw(minimum: 0, maximum: 65536)

  @Test func unityIsZeroDecibels() {
    #expect(ALSAMixer.setting(for: 65536, scale: decibels) == .decibels(0))
    #expect(ALSAMixer.setting(for: 65536, scale: raw) == .raw(65536))
  }

  // Observed LMS gains: volume 50 → 0x0F00 (−24.64 dB), volume 80 → 0x5200 (−9.89 dB).
  @Test func lmsVolumesBecomeTheirDecibels() {
    #expect(ALSAMixer.setting(for: 0x0F00, scale: decibels) == .decibels(-2464))
    #expect(ALSAMixer.setting(for: 0x5200, scale: decibels) == .decibels(-989))
    // Raw controls: −72…0 dB spread evenly, so −24.6 dB is two thirds of the way up.
    #expect(ALSAMixer.setting(for: 0x0F00, scale: raw) == .raw(43105))
  }

  @Test func clampedToTheControlsRange() {
    #expect(ALSAMixer.setting(for: 1, scale: decibels) == .decibels(-9633))
    #expect(ALSAMixer.setting(for: 3, scale: .decibels(minimum: -5000, maximum: 0)) == .decibels(-5000))
    #expect(ALSAMixer.setting(for: 1, scale: raw) == .raw(0))
    #expect(ALSAMixer.setting(for: 131072, scale: .decibels(minimum: -5000, maximum: 0)) == .decibels(0))
  }

  @Test func zeroGainIsTheMinimum() {
    #expect(ALSAMixer.setting(for: 0, scale: decibels) == .decibels(-10239))
    #expect(ALSAMixer.setting(for: 0, scale: .raw(minimum: 5, maximum: 255)) == .raw(5))
  }

  @Test(arguments: [
    ("hw:1,0", "hw:1"), ("hw:CARD=DAC,DEV=0", "hw:CARD=DAC"), ("plughw:0", "hw:0"),
    ("sysdefault:CARD=ALSA", "hw:CARD=ALSA"), ("default", "default"), ("pulse", "pulse"),
  ])
  func mixerDeviceOfAnOutput(_ output: String, _ mixer: String) {
    #expect(ALSAMixer.device(forOutput: output) == mixer)
  }

  @Test func missingMixerIsAnError() {
    #expect(throws: ALSAMixer.MixerError.self) { try ALSAMixer(device: "hw:97", control: "Master") }
  }
}
