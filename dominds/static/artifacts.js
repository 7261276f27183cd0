// Artifacts MCP tools saved in a dialog (see dominds/mcp/results.py): a tool result names them as
// /api/dialogs/<selfId>/artifacts/<name>. Images are fetched with the session cookie and shown inline.
import { h } from "./dom.js";

const ARTIFACT = /\/api\/dialogs\/[A-Za-z0-9-]+\/artifacts\/[A-Za-z0-9][A-Za-z0-9._-]*/g;
const IMAGE = /\.(png|jpg|jpeg|gif|webp|bmp)$/i;

export function artifactImages(text) {
  const paths = [...new Set(String(text || "").match(ARTIFACT) || [])].filter((p) => IMAGE.test(p));
  return paths.map((path) => {
    const img = h("img", { class: "artifact", alt: path.split("/").pop(), dataset: { artifact: path } });
    fetch(path, { credentials: "same-origin" })
      .then((r) => (r.ok ? r.blob() : Promise.reject(new Error(r.statusText))))
      .then((blob) => { img.src = URL.createObjectURL(blob); })
      .catch(() => { img.alt = `${img.alt} (not available)`; });
    return img;
  });
}
