import LMSControl
import Testing

@testable import Offline

private func track(
  _ id: Int, _ title: String, album: String, albumID: Int?, artist: String = "Ann", number: Int? = nil,
  disc: Int? = nil, cover: String? = nil
) -> QueueTrack {
  QueueTrack(
    index: 0, id: id, title: title, artist: artist, album: album, duration: 200, url: "file:///m/\(id).flac",
    type: "flc", fileSize: 1000 + id, coverID: cover, albumID: albumID, trackNumber: number, disc: disc)
}

private func entry(_ track: QueueTrack?, key: String) -> CacheRecord {
  CacheRecord(key: CacheKey(hex: key)!, url: track?.url ?? "", type: "flc", server: "lms:9000", track: track)
}

@Suite struct OfflineLibraryTests {
  static let entries = [
    entry(track(3, "Third", album: "Alpha", albumID: 1, number: 3), key: "0000000000000003"),
    entry(track(1, "First", album: "Alpha", albumID: 1, number: 1, cover: "c1"), key: "0000000000000001"),
    entry(track(12, "Disc two opener", album: "Alpha", albumID: 1, number: 1, disc: 2), key: "000000000000000c"),
    entry(track(7, "Lonely", album: "Beta", albumID: nil, artist: "bob"), key: "0000000000000007"),
    entry(nil, key: "00000000000000ff"),  // taken in without a record: not listed
  ]

  @Test func albumsByArtistTheirTracksByDiscAndNumber() throws {
    let library = OfflineLibrary(records: Self.entries, pinned: { $0 == CacheKey(hex: "0000000000000001") })
    #expect(library.albums.map(\.title) == ["Alpha", "Beta"])
    #expect(library.trackCount == 4)
    let alpha = try #require(library.album(id: "a1"))
    #expect(alpha.tracks.map(\.record.title) == ["First", "Third", "Disc two opener"])
    #expect(alpha.coverID == "c1")
    #expect(alpha.tracks.map(\.pinned) == [true, false, false])
    #expect(alpha.summary["pinned"] == false)
    // Without an album id, an album is its artist and title.
    let beta = try #require(library.albums.last)
    #expect(beta.id.hasPrefix("n"))
    #expect(library.album(id: beta.id)?.tracks.map(\.record.id) == [7])
    #expect(library.track(key: "0000000000000007")?.record.title == "Lonely")
    #expect(library.track(key: "00000000000000ff") == nil)
  }

  @Test func searchFindsEveryWordInTitlesArtistsAndAlbums() {
    let library = OfflineLibrary(records: Self.entries, pinned: { _ in false })
    #expect(library.search("alpha").albums.map(\.title) == ["Alpha"])
    #expect(library.search("ALPHA third").tracks.map(\.record.title) == ["Third"])
    #expect(library.search("bob").tracks.map(\.record.title) == ["Lonely"])
    #expect(library.search("   ").albums.isEmpty)
    #expect(library.search("nowhere").tracks.isEmpty)
    #expect(library.search("a", limit: 2).tracks.count == 2)
  }
}

@Suite struct QueueEditTests {
  static let queue = (0..<5).map { track($0 + 1, "T\($0)", album: "Alpha", albumID: 1) }

  @Test(arguments: [
    // edit, heard before, titles after, heard after
    (QueueEdit.remove(index: 1), 3, ["T0", "T2", "T3", "T4"], 2 as Int?),
    (QueueEdit.remove(index: 3), 3, ["T0", "T1", "T2", "T4"], nil),
    (QueueEdit.remove(index: 4), 3, ["T0", "T1", "T2", "T3"], 3),
    (QueueEdit.move(from: 3, to: 0), 3, ["T3", "T0", "T1", "T2", "T4"], 0),
    (QueueEdit.move(from: 0, to: 4), 3, ["T1", "T2", "T3", "T4", "T0"], 2),
    (QueueEdit.move(from: 4, to: 1), 3, ["T0", "T4", "T1", "T2", "T3"], 4),
    (QueueEdit.move(from: 4, to: 3), 1, ["T0", "T1", "T2", "T4", "T3"], 1),
    (QueueEdit.append([track(9, "X", album: "Beta", albumID: 2)]), 3, ["T0", "T1", "T2", "T3", "T4", "X"], 3),
    (QueueEdit.replace([track(9, "X", album: "Beta", albumID: 2)], startAt: 0), 3, ["X"], nil),
  ])
  func editsRenumberTheQueueAndFollowTheHeardEntry(
    edit: QueueEdit, heard: Int, titles: [String], heardAfter: Int?
  ) throws {
    let (queue, newHeard) = try edit.apply(to: Self.queue, heard: heard)
    #expect(queue.map(\.title) == titles)
    #expect(queue.map(\.index) == Array(queue.indices))
    #expect(newHeard == heardAfter)
  }

  @Test func anEntryThatIsNotThereIsRefused() {
    #expect(throws: QueueEditError.noSuchEntry(5)) { try QueueEdit.remove(index: 5).apply(to: Self.queue, heard: nil) }
    #expect(throws: QueueEditError.noSuchEntry(9)) {
      try QueueEdit.move(from: 0, to: 9).apply(to: Self.queue, heard: nil)
    }
    #expect(throws: QueueEditError.noSuchEntry(1)) {
      try QueueEdit.replace([], startAt: 1).apply(to: Self.queue, heard: nil)
    }
  }

  @Test func onlineEditsAreLMSCommands() {
    let tracks = [track(4, "A", album: "Alpha", albumID: 1), track(6, "B", album: "Alpha", albumID: 1)]
    #expect(
      QueueEdit.replace(tracks, startAt: 1).lmsCommands == [
        ["playlistcontrol", "cmd:load", "track_id:4,6"], ["playlist", "index", 1],
      ])
    #expect(QueueEdit.append(tracks).lmsCommands == [["playlistcontrol", "cmd:add", "track_id:4,6"]])
    #expect(QueueEdit.remove(index: 2).lmsCommands == [["playlist", "delete", 2]])
    #expect(QueueEdit.move(from: 2, to: 0).lmsCommands == [["playlist", "move", 2, 0]])
  }
}
