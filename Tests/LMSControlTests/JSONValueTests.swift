import Testing

@testable import LMSControl

@Suite struct JSONValueTests {
  @Test func parsesAnLMSReply() throws {
    let text =
      #"{"id":1,"method":"slim.request","params":["aa:bb",["status","-","2"]],"result":{"mode":"play","time":12.5,"playlist_cur_index":"1","playlist_loop":[{"playlist index":1,"id":"8","title":"A \"quoted\" \u00e9t\u00e9 \ud83c\udfb5"}]}}"#
    let value = try JSONValue(parsing: text)
    #expect(value["result"]?["mode"]?.string == "play")
    #expect(value["result"]?["time"]?.double == 12.5)
    #expect(value["result"]?["playlist_cur_index"]?.int == 1)
    #expect(value["result"]?["playlist_loop"]?[0]?["id"]?.int == 8)
    #expect(value["result"]?["playlist_loop"]?[0]?["title"]?.string == "A \"quoted\" été 🎵")
  }

  @Test func numbersWholeAndOtherwise() throws {
    let value = try JSONValue(parsing: "[0,-12,123456789012345,1234567890123456789,1.5,-2.5e3,1E2,-0]")
    let expected: [Double] = [0, -12, 123_456_789_012_345, 1_234_567_890_123_456_768, 1.5, -2500, 100, -0.0]
    #expect(value.array?.compactMap(\.double) == expected)
    #expect(value[7]?.double?.sign == .minus)
  }

  @Test func stringsWithAndWithoutEscapes() throws {
    let value = try JSONValue(
      parsing: #"["plain été", "tab\there", "\ud83c x", "\u0041\/\\", "", "end\""]"#)
    #expect(value.array?.compactMap(\.string) == ["plain été", "tab\there", "\u{FFFD} x", "A/\\", "", "end\""])
    #expect(throws: JSONError.self) { try JSONValue(parsing: "[\"a\\n\u{01}\"]") }
    #expect(throws: JSONError.self) { try JSONValue(parsing: "[\"a\\n") }
  }

  @Test func lenientAccessors() {
    #expect(JSONValue.string(" 42 ").int == 42)
    #expect(JSONValue.number(3).string == "3")
    #expect(JSONValue.number(0.5).string == "0.5")
    #expect(JSONValue.string("1").bool == true)
    #expect(JSONValue.string("abc").int == nil)
    #expect(JSONValue.null.string == nil)
  }

  @Test(arguments: [
    "", "{", "[1,]", "{\"a\"}", "{\"a\":1,}", "tru", "\"unterminated", "01x", "[1] 2", "\"\\q\"", "-",
    // Beyond Double: no JSON text could say the infinity it would read as (found by fuzzing).
    "2E999", "[-1e400]",
    String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
  ])
  func refusesGarbage(_ text: String) {
    #expect(throws: JSONError.self) { try JSONValue(parsing: text) }
  }

  @Test func encodesAndParsesBack() throws {
    let value: JSONValue = [
      "id": 3, "params": ["02:11:22:33:44:55", ["playlist", "jump", 2, 1, 0, ["timeOffset": 12.25]]],
      "text": "line\nbreak \"q\" \u{01}",
    ]
    let text = value.encoded
    #expect(text.contains(#""timeOffset":12.25"#))
    #expect(try JSONValue(parsing: text) == value)
  }

  @Test func base64() {
    #expect(Base64.encode(Array("user:pass".utf8)) == "dXNlcjpwYXNz")
    #expect(Base64.encode(Array("a".utf8)) == "YQ==")
    #expect(Base64.encode(Array("ab".utf8)) == "YWI=")
  }

  @Test func statusDecodesLeniently() throws {
    let result = try JSONValue(
      parsing: #"""
        {"mode":"pause","time":"3.5","duration":20,"playlist_cur_index":"1","playlist_timestamp":1700000000.25,
         "playlist_tracks":3,"mixer volume":"80","player_connected":1,"playlist repeat":"2",
         "playlist_loop":[
           {"playlist index":"1","id":8,"title":"B","artist":"X","duration":"20.5","url":"file:///m/b.flac",
            "type":"flc","filesize":"123456","coverid":"abc","remote":0},
           {"playlist index":2,"id":-5,"title":"Radio","url":"http://radio/stream","remote":"1"},
           {"title":"no index"}]}
        """#)
    let status = LMSStatus(result: result)
    #expect(status.mode == .pause)
    #expect(status.time == 3.5)
    #expect(status.currentIndex == 1)
    #expect(status.volume == 80)
    #expect(status.tracks.count == 2)
    #expect(status.currentTrack?.fileSize == 123456)
    #expect(status.currentTrack?.duration == 20.5)
    #expect(status.currentTrack?.isDownloadable == true)
    #expect(status.tracks[1].isDownloadable == false)
    #expect(status.repeatMode == .queue)
    #expect(LMSStatus(result: ["mode": "play"]).repeatMode == .off)
  }

  @Test func aSyncedPlayersStatusNamesItsGroup() throws {
    let synced = try JSONValue(
      parsing: #"{"mode":"play","sync_master":"02:11:22:33:55:01","sync_slaves":"02:11:22:33:55:02,AA:BB:CC:DD:EE:FF"}"#
    )
    let group = try #require(LMSStatus(result: synced).syncGroup)
    #expect(group.master == "02:11:22:33:55:01")
    #expect(group.members == ["02:11:22:33:55:01", "02:11:22:33:55:02", "aa:bb:cc:dd:ee:ff"])
    #expect(group.contains("AA:BB:CC:DD:EE:FF"))
    #expect(!group.contains("02:11:22:33:55:03"))
    #expect(LMSStatus(result: ["mode": "play"]).syncGroup == nil)
    #expect(LMSStatus(result: ["mode": "play", "sync_master": ""]).syncGroup == nil)
  }

  @Test func replyErrorsAreReported() {
    #expect(throws: LMSError.server("Invalid command")) {
      try LMSClient.result(of: Array(#"{"id":1,"error":{"code":-1,"message":"Invalid command"}}"#.utf8))
    }
    #expect(throws: LMSError.self) { try LMSClient.result(of: Array("<html>".utf8)) }
  }
}
