import SlimProto
import Testing

@Suite("Capabilities")
struct CapabilitiesTests {
  static let slimplay = Capabilities(
    modelName: "SlimPlay", firmware: "0.1.0", maxSampleRate: 192000, formats: ["flc", "ops", "mp3", "aif", "pcm"])

  @Test func encodedStringCarriesTheKeysLMSReads() {
    let items = Self.slimplay.encoded.split(separator: ",").map(String.init)
    #expect(items.contains("Model=squeezelite"))
    #expect(items.contains("ModelName=SlimPlay"))
    #expect(items.contains("Firmware=0.1.0"))
    #expect(items.contains("AccuratePlayPoints=1"))
    #expect(items.contains("MaxSampleRate=192000"))
    #expect(!items.contains("CanHTTPS=1"))
    #expect(!items.contains { $0.hasPrefix("SyncgroupID=") })
    #expect(items.filter { !$0.contains("=") } == ["flc", "ops", "mp3", "aif", "pcm"])
  }

  @Test func encodedStringExactly() {
    #expect(
      Self.slimplay.encoded
        == "Model=squeezelite,ModelName=SlimPlay,Firmware=0.1.0,AccuratePlayPoints=1,HasDigitalOut=1,"
        + "HasPolarityInversion=1,Balance=1,MaxSampleRate=192000,flc,ops,mp3,aif,pcm")
  }

  @Test func optionalItems() {
    var caps = Self.slimplay
    caps.canHTTPS = true
    caps.accuratePlayPoints = false
    caps.hasPolarityInversion = false
    caps.syncGroupID = "0123456789"
    let text = caps.encoded
    #expect(text.hasPrefix("CanHTTPS=1,"))
    #expect(text.hasSuffix(",pcm,SyncgroupID=0123456789"))
    #expect(!text.contains("AccuratePlayPoints"))
    #expect(!text.contains("HasPolarityInversion"))
  }

  @Test func parseSplitsTheSqueezeliteString() {
    let (values, formats) = Capabilities.parse(Observed.squeezeliteCapabilities)
    #expect(
      values == [
        "CanHTTPS": "1", "Model": "squeezelite", "AccuratePlayPoints": "1", "HasDigitalOut": "1",
        "HasPolarityInversion": "1", "Balance": "1", "Firmware": "v1.9.9-1414", "ModelName": "SqueezeLite",
        "MaxSampleRate": "384000",
      ])
    #expect(
      formats == [
        "dsf", "dff", "alc", "wma", "wmap", "wmal", "aac", "ogg", "ops", "ogf", "flc", "aif", "pcm", "mp3", "loc",
      ])
  }

  @Test func parseOfEncodedRoundTrips() {
    var caps = Self.slimplay
    caps.syncGroupID = "0000000042"
    let (values, formats) = Capabilities.parse(caps.encoded)
    #expect(values["Model"] == "squeezelite")
    #expect(values["MaxSampleRate"] == "192000")
    #expect(values["SyncgroupID"] == "0000000042")
    #expect(formats == caps.formats)
  }

  @Test func formatTokensFollowLMSRule() {
    // ^[a-z][a-z0-9]{1,4}$
    let (_, formats) = Capabilities.parse("a1,x,toolong,Mp3,1ab,wmal,abcde,abcdef,a-b,,mp3")
    #expect(formats == ["a1", "wmal", "abcde", "mp3"])
  }

  @Test func valueMayContainEquals() {
    let (values, _) = Capabilities.parse("Key=a=b")
    #expect(values["Key"] == "a=b")
  }
}
