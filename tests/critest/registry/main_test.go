package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// layout writes an OCI layout with one manifest blob named NAMES.
func layout(t *testing.T, manifest string, names ...string) (dir, digest string) {
	t.Helper()
	dir = t.TempDir()
	sum := sha256.Sum256([]byte(manifest))
	h := hex.EncodeToString(sum[:])
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", h), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	for _, n := range names {
		index.Manifests = append(index.Manifests, descriptor{
			MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: "sha256:" + h,
			Size: int64(len(manifest)), Annotations: map[string]string{"io.containerd.image.name": n},
		})
	}
	b, err := json.Marshal(index)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, "sha256:" + h
}

func TestServe(t *testing.T) {
	const manifest = `{"schemaVersion":2}`
	dir, digest := layout(t, manifest, "gcr.io/repo/img:1", "gcr.io/repo/img:2")
	r, err := load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r)
	defer srv.Close()

	for _, tc := range []struct {
		name, method, path string
		status             int
		body, contentType  string
	}{
		{"api version check", "GET", "/v2/", 200, "", ""},
		{"manifest by tag, mirror ns", "GET", "/v2/repo/img/manifests/1?ns=gcr.io", 200, manifest, "application/vnd.oci.image.manifest.v1+json"},
		{"second tag of the image", "GET", "/v2/repo/img/manifests/2?ns=gcr.io", 200, manifest, "application/vnd.oci.image.manifest.v1+json"},
		{"manifest by tag, HEAD", "HEAD", "/v2/repo/img/manifests/1?ns=gcr.io", 200, "", "application/vnd.oci.image.manifest.v1+json"},
		{"manifest by digest", "GET", "/v2/repo/img/manifests/" + digest + "?ns=gcr.io", 200, manifest, "application/vnd.oci.image.manifest.v1+json"},
		{"full name without ns", "GET", "/v2/gcr.io/repo/img/manifests/1", 200, manifest, "application/vnd.oci.image.manifest.v1+json"},
		{"unknown tag", "GET", "/v2/repo/img/manifests/3?ns=gcr.io", 404, "", ""},
		{"other registry's name", "GET", "/v2/repo/img/manifests/1?ns=registry.k8s.io", 404, "", ""},
		{"digest of another name", "GET", "/v2/repo/other/manifests/" + digest + "?ns=gcr.io", 404, "", ""},
		{"blob", "GET", "/v2/repo/img/blobs/" + digest + "?ns=gcr.io", 200, manifest, "application/octet-stream"},
		{"blob path escape", "GET", "/v2/repo/img/blobs/sha256:..%2f..%2findex.json", 404, "", ""},
		{"unknown blob", "GET", "/v2/repo/img/blobs/sha256:0000000000000000000000000000000000000000000000000000000000000000", 404, "", ""},
		{"push refused", "PUT", "/v2/repo/img/manifests/1", 405, "", ""},
		{"not the v2 API", "GET", "/v1/", 404, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, tc.status, body)
			}
			if tc.status != 200 {
				return
			}
			if tc.body != "" && string(body) != tc.body {
				t.Errorf("body %q, want %q", body, tc.body)
			}
			if tc.contentType != "" {
				if got := resp.Header.Get("Content-Type"); got != tc.contentType {
					t.Errorf("Content-Type %q, want %q", got, tc.contentType)
				}
				if got := resp.Header.Get("Docker-Content-Digest"); got != digest {
					t.Errorf("Docker-Content-Digest %q, want %q", got, digest)
				}
				if tc.method == "HEAD" && resp.ContentLength != int64(len(manifest)) {
					t.Errorf("HEAD Content-Length %d, want %d", resp.ContentLength, len(manifest))
				}
			}
		})
	}
}
