/// The page at `/`: now playing, controls, volume, the queue, the pins and the library (what the
/// device holds, searchable, playable without the server), live through server-sent events. One
/// self-contained document: no build step, no external assets.
enum ControlPage {
  static let html = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>slimplay</title>
    <style>
      :root { color-scheme: light dark; font-family: system-ui, sans-serif; }
      body { margin: 0 auto; max-width: 32rem; padding: 1rem; }
      #banner { display: none; padding: .6rem .8rem; border-radius: .4rem; font-weight: 600; margin-bottom: 1rem;
                background: #b3261e; color: #fff; }
      #banner.resyncing { background: #8a5a00; }
      #art { width: 100%; aspect-ratio: 1; object-fit: cover; border-radius: .5rem; background: #8884; }
      h1 { font-size: 1.3rem; margin: .8rem 0 .2rem; }
      #artist { opacity: .75; margin: 0 0 .6rem; }
      progress { width: 100%; height: .5rem; }
      #times { display: flex; justify-content: space-between; font-size: .85rem; opacity: .75; }
      .controls { display: flex; gap: .5rem; justify-content: center; margin: .8rem 0; }
      button { font-size: 1rem; min-width: 5.5rem; min-height: 3rem; border-radius: .5rem; border: 1px solid #8886;
               background: transparent; color: inherit; cursor: pointer; }
      label { display: flex; gap: .6rem; align-items: center; }
      input[type=range] { flex: 1; }
      ol { padding-left: 1.4rem; }
      li.current { font-weight: 700; }
      .cached { font-size: .75rem; border: 1px solid currentColor; border-radius: .3rem; padding: 0 .25rem;
                margin-left: .4rem; opacity: .7; }
      #state { font-size: .8rem; opacity: .6; }
      button.small { font-size: .8rem; min-width: 0; min-height: 2rem; padding: 0 .6rem; margin-left: .4rem; }
      #pins li { margin: .3rem 0; }
      #search { width: 100%; font-size: 1rem; padding: .5rem; box-sizing: border-box; border-radius: .4rem;
                border: 1px solid #8886; background: transparent; color: inherit; }
      .album { display: flex; gap: .6rem; align-items: center; margin: .5rem 0; cursor: pointer; }
      .album img { width: 3rem; height: 3rem; object-fit: cover; border-radius: .3rem; background: #8884; }
      .tracks li { margin: .25rem 0; }
      .size { font-size: .8rem; opacity: .7; }
    </style>
    </head>
    <body>
    <div id="banner" role="status"></div>
    <div id="return" hidden><span id="return-text">Server is back</span>
      <button id="return-now" class="small">Return</button> <button id="stay" class="small">Stay offline</button></div>
    <img id="art" alt="">
    <h1 id="title">Nothing playing</h1>
    <p id="artist"></p>
    <button id="pin-album" class="small" hidden>Pin album</button>
    <progress id="progress" value="0" max="1"></progress>
    <div id="times"><span id="elapsed">0:00</span><span id="duration">0:00</span></div>
    <div class="controls">
      <button id="previous" title="Previous">Previous</button>
      <button id="toggle" title="Play or pause">Play</button>
      <button id="next" title="Next">Next</button>
    </div>
    <label>Volume <input id="volume" type="range" min="0" max="100" step="1"></label>
    <h2>Queue</h2>
    <ol id="queue"></ol>
    <h2>Pinned</h2>
    <ul id="pins"><li>Nothing pinned</li></ul>
    <h2>On this device</h2>
    <input id="search" type="search" placeholder="Search albums, artists, tracks" aria-label="Search the library">
    <div id="library"></div>
    <p id="state"></p>
    <script>
    "use strict";
    const token = new URLSearchParams(location.search).get("token");
    const withToken = path => token ? path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token) : path;
    const $ = id => document.getElementById(id);
    const clock = s => { s = Math.max(0, Math.floor(s || 0)); return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0"); };
    let volumeBusy = false;
    async function send(command, body) {
      const reply = await fetch(withToken("/api/" + command), { method: "POST", body: JSON.stringify(body || {}) });
      if (!reply.ok) { const e = await reply.json().catch(() => ({})); $("state").textContent = e.error || reply.statusText; }
    }
    $("return-now").onclick = () => send("return");
    $("stay").onclick = () => send("stay-offline");
    $("previous").onclick = () => send("previous");
    $("toggle").onclick = () => send("toggle");
    $("next").onclick = () => send("next");
    $("volume").oninput = () => { volumeBusy = true; };
    $("volume").onchange = () => { send("volume", { value: Number($("volume").value) }); volumeBusy = false; };
    const button = (text, title, action) => {
      const b = document.createElement("button");
      b.className = "small"; b.textContent = text; b.title = title; b.onclick = action;
      return b;
    };
    const megabytes = bytes => ((bytes || 0) / 1048576).toFixed(1);
    let shownTrack = null;
    function render(status) {
      const banner = $("banner");
      banner.className = status.state;
      banner.style.display = status.state === "online" ? "none" : "block";
      const choice = status.server_return;
      $("return").hidden = !(choice && choice.server_back);
      if (choice) {
        $("return-text").textContent = choice.stayed ? "Staying offline; the server is there" : "Server is back:";
        $("stay").hidden = choice.stayed;
      }
      banner.textContent = status.state === "offline" ? "Offline: playing from the cache"
        : status.state === "resyncing" ? "Reconnecting to the server…"
        : status.state === "disconnected" ? "Server connection lost: playing what is buffered" : "";
      const now = status.now_playing;
      if (now) {
        const key = now.index + "/" + now.title;
        if (key !== shownTrack) {
          shownTrack = key;
          $("title").textContent = now.title;
          $("artist").textContent = [now.artist, now.album].filter(Boolean).join(" — ");
          showArt(now.artwork);
        } else if (now.artwork && $("art").dataset.url !== now.artwork) {
          showArt(now.artwork);
        }
        $("progress").max = now.duration || 1;
        $("progress").value = status.position || 0;
        $("elapsed").textContent = clock(status.position);
        $("duration").textContent = clock(now.duration);
      }
      const online = status.state === "online";
      const pinned = new Set((status.pins || []).map(pin => pin.kind + "/" + pin.id));
      const pinAlbum = $("pin-album");
      pinAlbum.hidden = !(online && now && now.album_id && !pinned.has("album/" + now.album_id));
      pinAlbum.onclick = () => send("pin", { kind: "album", id: now.album_id });
      $("toggle").textContent = status.playing ? "Pause" : "Play";
      if (!volumeBusy && typeof status.volume === "number") $("volume").value = status.volume;
      const queue = $("queue");
      queue.replaceChildren(...(status.queue || []).map(track => {
        const item = document.createElement("li");
        item.value = track.index + 1;
        item.textContent = track.title + (track.artist ? " — " + track.artist : "");
        if (now && track.index === now.index) item.className = "current";
        if (track.cached) { const mark = document.createElement("span"); mark.className = "cached"; mark.textContent = "cached"; item.append(mark); }
        if (online && track.id > 0 && !pinned.has("track/" + track.id)) {
          item.append(button("Pin", "Keep this track on the device", () => send("pin", { kind: "track", id: track.id })));
        }
        if (track.index > 0) item.append(button("Up", "Move up", () => send("queue/move", { from: track.index, to: track.index - 1 })));
        item.append(button("Remove", "Remove from the queue", () => send("queue/remove", { index: track.index })));
        return item;
      }));
      const pins = status.pins || [];
      $("pins").replaceChildren(...(pins.length ? pins.map(pin => {
        const item = document.createElement("li");
        item.textContent = pin.title + " (" + pin.kind + ") ";
        const size = document.createElement("span");
        size.className = "size";
        size.textContent = pin.cached_tracks + "/" + pin.tracks + " tracks, " + megabytes(pin.cached_bytes) + " of " + megabytes(pin.total_bytes) + " MB";
        item.append(size, button("Unpin", "Keep it no longer", () => send("unpin", { kind: pin.kind, id: pin.id })));
        return item;
      }) : [Object.assign(document.createElement("li"), { textContent: "Nothing pinned" })]));
      $("state").textContent = status.state + (status.server ? " · " + status.server : "");
    }
    // The server sends a track's text and cover together; a cover that is late comes in a
    // later update for the same track.
    function showArt(url) {
      const art = $("art");
      art.dataset.url = url || "";
      if (url) { art.src = withToken(url); art.style.visibility = "visible"; }
      else { art.removeAttribute("src"); art.style.visibility = "hidden"; }
    }
    $("art").onerror = () => showArt(null);
    // The library: albums (or what a search finds); an album opens to its tracks. Only the view
    // asked for last is shown (a search typed on must not replace the album opened meanwhile).
    let libraryView = 0;
    let searchTimer = null;
    async function library(query) {
      const view = ++libraryView;
      const reply = await fetch(withToken("/api/library" + query));
      const found = reply.ok ? await reply.json() : null;
      return view === libraryView ? { found } : null;
    }
    function trackItem(track, playAll, index) {
      const item = document.createElement("li");
      item.textContent = (track.tracknum ? track.tracknum + ". " : "") + track.title + (track.artist ? " — " + track.artist : "");
      item.append(button("Play", "Play from here", () => send("queue/play", { ...playAll, start: index })),
                  button("Add", "Add to the queue", () => send("queue/add", { tracks: [track.key] })));
      return item;
    }
    function albumRow(album) {
      const row = document.createElement("div");
      row.className = "album";
      const cover = document.createElement("img");
      cover.alt = "";
      if (album.coverid) cover.src = withToken("/api/artwork/" + album.coverid);
      const text = document.createElement("span");
      text.textContent = album.title + " — " + album.artist + " (" + album.tracks + ")";
      row.append(cover, text);
      row.onclick = () => showAlbum(album.id);
      return row;
    }
    async function showAlbum(id) {
      clearTimeout(searchTimer);
      const answer = await library("?album=" + encodeURIComponent(id));
      if (!answer || !answer.found) return;
      const album = answer.found;
      const list = document.createElement("ol");
      list.className = "tracks";
      const all = { album: album.id };
      list.append(...album.tracks.map((track, index) => trackItem(track, all, index)));
      $("library").replaceChildren(albumRow({ ...album, tracks: album.tracks.length }),
        button("Play album", "Play the album", () => send("queue/play", all)),
        button("Add album", "Add the album to the queue", () => send("queue/add", all)), list);
    }
    async function showLibrary() {
      const text = $("search").value.trim();
      const answer = await library(text ? "?q=" + encodeURIComponent(text) : "");
      if (!answer) return;
      const found = answer.found;
      if (!found) { $("library").replaceChildren(); return; }
      const nodes = found.albums.map(albumRow);
      if (found.tracks && found.tracks.length) {
        const list = document.createElement("ol");
        list.className = "tracks";
        const keys = { tracks: found.tracks.map(track => track.key) };
        list.append(...found.tracks.map((track, index) => trackItem(track, keys, index)));
        nodes.push(list);
      }
      if (!nodes.length) nodes.push(Object.assign(document.createElement("p"), { textContent: text ? "Nothing found" : "Nothing cached yet" }));
      $("library").replaceChildren(...nodes);
    }
    $("search").oninput = () => { clearTimeout(searchTimer); searchTimer = setTimeout(showLibrary, 200); };
    showLibrary();
    const events = new EventSource(withToken("/api/events"));
    events.addEventListener("status", e => render(JSON.parse(e.data)));
    </script>
    </body>
    </html>
    """#
}
