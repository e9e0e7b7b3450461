import LMSControl
import Support
import TestSupport
import Testing

@testable import Offline

/// Replies as LMS 8.3.0 gave them (`titles album_id:1 sort:tracknum`, `playlists tracks`), trimmed
/// to two tracks; 7.9.1 answers with the same keys.
private let albumReply = #"""
  {"titles_loop":[{"id":1,"title":"Song 1","artist":"Ann","album":"Alpha","album_id":"1","tracknum":"1",
  "duration":3,"url":"file:///music/AlbumA/t1.flac","filesize":"93767","type":"flc","remote":"0"},
  {"id":2,"title":"Song 2","artist":"Ann","album":"Alpha","album_id":"1","tracknum":"2","duration":3,
  "url":"file:///music/AlbumA/t2.flac","filesize":"103852","type":"flc","remote":"0"}],"count":2}
  """#
private let playlistReply = #"""
  {"playlisttracks_loop":[{"playlist index":"0","id":3,"title":"Song 3","artist":"Ann","album":"Alpha",
  "album_id":"1","tracknum":"3","duration":3,"url":"file:///music/AlbumA/t3.flac","filesize":"115248",
  "type":"flc"},{"playlist index":1,"id":1,"title":"Song 1","artist":"Ann","album":"Alpha","album_id":"1",
  "tracknum":"1","duration":3,"url":"file:///music/AlbumA/t1.flac","filesize":"93767","type":"flc"}],
  "count":2,"__playlistTitle":"Road"}
  """#

private func json(_ text: String) -> JSONValue { try! JSONValue(parsing: Array(text.utf8)) }

@Suite struct PinListTests {
  @Test func anAlbumIsReadFromTheServersReply() throws {
    let pin = try #require(PinResolver.pin(.album, id: 1, server: "lms:9000", reply: json(albumReply)))
    #expect(pin.title == "Alpha")
    #expect(pin.tracks.map(\.id) == [1, 2])
    #expect(pin.tracks.map(\.index) == [0, 1])
    #expect(pin.tracks.map(\.trackNumber) == [1, 2])
    #expect(pin.tracks[1].fileSize == 103_852)
    #expect(pin.tracks[1].albumID == 1)
  }

  @Test func aPlaylistKeepsItsOrderAndItsName() throws {
    let pin = try #require(PinResolver.pin(.playlist, id: 4, server: "lms:9000", reply: json(playlistReply)))
    #expect(pin.title == "Road")
    #expect(pin.tracks.map(\.id) == [3, 1])
  }

  @Test func nothingUnderTheIdIsNoPin() {
    #expect(PinResolver.pin(.album, id: 99, server: "lms:9000", reply: json(#"{"count":0}"#)) == nil)
    #expect(PinResolver.playlistID(named: "road", in: json(#"{"playlists_loop":[{"id":4,"playlist":"Road"}]}"#)) == 4)
    #expect(PinResolver.playlistID(named: "Car", in: json(#"{"playlists_loop":[{"id":4,"playlist":"Road"}]}"#)) == nil)
  }

  @Test func theListSurvivesARestartAndATrackInTwoPinsIsFetchedOnce() throws {
    let album = try #require(PinResolver.pin(.album, id: 1, server: "lms:9000", reply: json(albumReply)))
    let playlist = try #require(PinResolver.pin(.playlist, id: 4, server: "lms:9000", reply: json(playlistReply)))
    var list = PinList()
    list.add(album)
    list.add(playlist)
    list.add(album)  // again: replaced, not doubled
    #expect(list.pins.map(\.title) == ["Alpha", "Road"])
    #expect(list.plannedTracks.map(\.track.id) == [1, 2, 3])
    #expect(list.keys.count == 3)

    let folder = TemporaryDirectory()
    defer { folder.remove() }
    try list.save(to: folder.path + "/pins.json")
    #expect(PinList.load(from: folder.path + "/pins.json") == list)

    #expect(list.remove(kind: .album, id: 1, server: "lms:9000")?.title == "Alpha")
    #expect(list.remove(kind: .album, id: 1, server: "lms:9000") == nil)
    #expect(list.plannedTracks.map(\.track.id) == [3, 1])
  }

  @Test func progressCountsWhatIsCached() throws {
    let album = try #require(PinResolver.pin(.album, id: 1, server: "lms:9000", reply: json(albumReply)))
    let first = album.keys[0]
    let progress = PinProgress(pin: PinSummary(album)) { $0 == first ? 93_767 : nil }
    #expect(progress.cachedTracks == 1)
    #expect(progress.cachedBytes == 93_767)
    #expect(progress.totalBytes == 93_767 + 103_852)
    #expect(!progress.isComplete)
  }
}
