// Package ui is the web console of omnigraph serve: a single-page app
// (plain JavaScript modules, with CodeMirror 5 and Cytoscape.js vendored
// under assets/vendor, see VENDOR.md) embedded in the binary and served at
// /ui/. Its files are public and hold no data; every data call they make
// goes to the server's authenticated routes with the user's bearer token,
// kept in the tab's sessionStorage and sent as a header, never a cookie.
//
// The handler serves each embedded file by its path under the prefix, and
// index.html for every other path without a file extension (the app's own
// pages, so deep links and reloads work); a missing file is 404. Files are
// gzipped once when the handler is built and sent compressed to clients
// that accept it, with an ETag for revalidation, and every answer carries
// a Content-Security-Policy that allows only the console's own scripts,
// styles and same-origin requests.
package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strings"
)

//go:embed all:assets
var embedded embed.FS

// Prefix is the path the server mounts the console at.
const Prefix = "/ui/"

// ContentSecurityPolicy is sent with every file: scripts, styles, fonts
// and requests only from the server itself (no inline script, no eval, no
// CDN), images also as data: and blob: URLs (graph exports), no framing.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; font-src 'self'; connect-src 'self'; " +
	"base-uri 'self'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console.
type Handler struct {
	files map[string]*file
}

type file struct {
	body, gz []byte
	ctype    string
	etag     string
}

// File describes one embedded file (sizes for the payload report).
type File struct {
	Path    string
	Bytes   int
	Gzipped int
}

// Assets is the embedded app: the files served under Prefix, by path.
func Assets() fs.FS {
	root, err := fs.Sub(embedded, "assets")
	if err != nil {
		panic(err) // the directory is embedded at build time
	}
	return root
}

// New reads and compresses every embedded file.
func New() (*Handler, error) {
	h := &Handler{files: map[string]*file{}}
	root := Assets()
	err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		f := &file{body: b, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: contentType(p)}
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		if z.Len() < len(b) {
			f.gz = z.Bytes()
		}
		h.files[p] = f
		return nil
	})
	if err != nil {
		return nil, err
	}
	if h.files["index.html"] == nil {
		return nil, fmt.Errorf("ui: the embedded assets have no index.html")
	}
	return h, nil
}

// Files lists the embedded files by path.
func (h *Handler) Files() []File {
	out := make([]File, 0, len(h.files))
	for p, f := range h.files {
		gz := len(f.gz)
		if gz == 0 {
			gz = len(f.body)
		}
		out = append(out, File{Path: p, Bytes: len(f.body), Gzipped: gz})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func contentType(p string) string {
	switch path.Ext(p) {
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".html":
		return "text/html; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case "":
		return "text/plain; charset=utf-8" // LICENSE files
	}
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// ServeHTTP serves GET and HEAD requests under Prefix.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", ContentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "the console's files are read with GET", http.StatusMethodNotAllowed)
		return
	}
	rel, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	f := h.files[rel]
	if f == nil || rel == "" {
		if rel != "" && (path.Ext(rel) != "" || strings.Contains(rel, "..")) {
			// A file that is not there: never index.html, whose
			// markup would be read as a script or a style.
			http.Error(w, "no such file in the console", http.StatusNotFound)
			return
		}
		f = h.files["index.html"]
	}
	hd.Set("Content-Type", f.ctype)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", f.etag)
	hd.Set("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.body
	if f.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		hd.Set("Content-Encoding", "gzip")
		body = f.gz
	}
	hd.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(body)
	}
}

// acceptsGzip reads an Accept-Encoding header: gzip listed without q=0.
func acceptsGzip(v string) bool {
	for _, part := range strings.Split(v, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}
