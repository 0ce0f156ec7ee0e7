// Command registry serves OCI image layouts read-only over the registry
// protocol's pull half, on 127.0.0.1, for the critest suite
// (tests/critest/critest.bats): critest always calls PullImage, and
// containerd's CRI resolves every pull against a registry, even for an
// image it holds. containerd's registry hosts (hosts.toml) point the
// registries critest names at this server, which has only the images the
// suite built itself (hack/mkimage.sh): nothing leaves the machine.
//
// Usage: registry ADDR-FILE LAYOUT-DIR...
//
// It listens on 127.0.0.1 on a free port, writes "127.0.0.1:PORT" to
// ADDR-FILE once it accepts, and serves until killed. An image is found by
// the io.containerd.image.name annotation of a manifest in a layout's
// index.json ("gcr.io/repo/name:tag"); containerd asks a mirror for
// /v2/repo/name/manifests/tag?ns=gcr.io, so the name looked up is the ns
// plus the path. Blobs are looked up by digest in every layout.
package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// registry maps image names ("host/path:tag") to manifest descriptors,
// and holds the layouts whose blobs it serves.
type registry struct {
	images  map[string]descriptor
	layouts []string
}

func load(layouts []string) (*registry, error) {
	r := &registry{images: map[string]descriptor{}, layouts: layouts}
	for _, dir := range layouts {
		b, err := os.ReadFile(filepath.Join(dir, "index.json"))
		if err != nil {
			return nil, err
		}
		var index struct {
			Manifests []descriptor `json:"manifests"`
		}
		if err := json.Unmarshal(b, &index); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
		for _, m := range index.Manifests {
			if name := m.Annotations["io.containerd.image.name"]; name != "" {
				r.images[name] = m
			}
		}
	}
	return r, nil
}

// blob opens the blob DIGEST ("sha256:hex") of any layout.
func (r *registry) blob(digest string) (*os.File, error) {
	algo, hex, ok := strings.Cut(digest, ":")
	if !ok || algo != "sha256" || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
		return nil, os.ErrNotExist
	}
	for _, dir := range r.layouts {
		f, err := os.Open(filepath.Join(dir, "blobs", algo, hex))
		if err == nil {
			return f, nil
		}
	}
	return nil, os.ErrNotExist
}

func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "read-only registry", http.StatusMethodNotAllowed)
		return
	}
	p := strings.TrimPrefix(req.URL.Path, "/v2/")
	if p == req.URL.Path {
		http.NotFound(w, req)
		return
	}
	if p == "" {
		w.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		w.WriteHeader(http.StatusOK)
		return
	}
	var repo, kind, ref string
	for _, k := range []string{"/manifests/", "/blobs/"} {
		if i := strings.LastIndex(p, k); i > 0 {
			repo, kind, ref = p[:i], strings.Trim(k, "/"), p[i+len(k):]
			break
		}
	}
	if repo == "" {
		http.NotFound(w, req)
		return
	}
	name := repo
	if ns := req.URL.Query().Get("ns"); ns != "" {
		name = ns + "/" + repo
	}
	mediaType, digest := "application/octet-stream", ref
	if kind == "manifests" {
		d, ok := r.lookup(name, ref)
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"no image %s"}]}`, jsonEscape(name+":"+ref))
			return
		}
		mediaType, digest = d.MediaType, d.Digest
	}
	f, err := r.blob(digest)
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"errors":[{"code":"BLOB_UNKNOWN","message":"no blob %s"}]}`, jsonEscape(digest))
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Docker-Content-Digest", digest)
	// ServeContent sets Content-Length and answers HEAD without a body.
	http.ServeContent(w, req, "", time.Time{}, f)
}

// lookup finds the manifest of NAME at REF, a tag or a digest.
func (r *registry) lookup(name, ref string) (descriptor, bool) {
	if strings.HasPrefix(ref, "sha256:") {
		for n, d := range r.images {
			if d.Digest == ref && strings.HasPrefix(n, name+":") {
				return d, true
			}
		}
		return descriptor{}, false
	}
	d, ok := r.images[name+":"+ref]
	return d, ok
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: registry ADDR-FILE LAYOUT-DIR...")
		os.Exit(2)
	}
	r, err := load(os.Args[2:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
	// Written once the socket accepts: the reader may connect at once.
	tmp := os.Args[1] + ".tmp"
	if err := os.WriteFile(tmp, []byte(l.Addr().String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
	if err := os.Rename(tmp, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "registry:", err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "registry:", http.Serve(l, r))
	os.Exit(1)
}
