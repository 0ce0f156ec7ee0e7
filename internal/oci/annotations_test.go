package oci

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestParseRequest(t *testing.T) {
	const id = "c1"
	own := Pod{Owner: id, Sandbox: true}
	stamp := &Stamp{Version: 1, Owner: "pod1", Root: "/run/runc", StateDir: "/run/runc-userns", HostID: 2147483648, Size: 65536, UsernsPath: "/run/runc-userns/pods/pod1/userns", Mappings: true}
	cases := []struct {
		name        string
		annotations map[string]string
		want        Request
		// wantErr lists what the error must mention; nil means no error.
		wantErr []string
	}{
		{name: "nil map", annotations: nil, want: Request{Pod: own}},
		{name: "empty map", annotations: map[string]string{}, want: Request{Pod: own}},
		{name: "auto", annotations: map[string]string{AnnotationUserns: "auto"}, want: Request{Userns: UsernsAuto, Pod: own}},
		{name: "host", annotations: map[string]string{AnnotationUserns: "host"}, want: Request{Userns: UsernsHost, Pod: own}},
		{name: "auto with blanks", annotations: map[string]string{AnnotationUserns: " auto\n"}, want: Request{Userns: UsernsAuto, Pod: own}},
		{name: "invalid value", annotations: map[string]string{AnnotationUserns: "yes"}, wantErr: []string{id, AnnotationUserns, `"yes"`}},
		{name: "wrong case", annotations: map[string]string{AnnotationUserns: "Auto"}, wantErr: []string{id, AnnotationUserns, `"Auto"`}},
		{name: "empty value", annotations: map[string]string{AnnotationUserns: ""}, wantErr: []string{id, AnnotationUserns, `""`}},
		{name: "oversize value", annotations: map[string]string{AnnotationUserns: strings.Repeat("a", MaxAnnotationValue+1)}, wantErr: []string{id, AnnotationUserns, "4097"}},
		{name: "oversize stamp: its own limit", annotations: map[string]string{AnnotationStamp: strings.Repeat("a", MaxStampValue+1)}, wantErr: []string{id, AnnotationStamp, "more than 1048576"}},
		{name: "oversize unknown key", annotations: map[string]string{Prefix + "x": strings.Repeat("a", MaxAnnotationValue+1)}, wantErr: []string{id, Prefix + "x"}},
		{name: "value of exactly the limit", annotations: map[string]string{AnnotationIdmapSkip: "/" + strings.Repeat("a", MaxAnnotationValue-1)}, want: Request{IdmapSkip: []string{"/" + strings.Repeat("a", MaxAnnotationValue-1)}, Pod: own}},
		{name: "oversize foreign key is ignored", annotations: map[string]string{"io.kubernetes.x": strings.Repeat("a", 2*MaxAnnotationValue)}, want: Request{Pod: own}},
		{name: "non-UTF-8 value", annotations: map[string]string{AnnotationPIDNamespace: "container:\xff"}, wantErr: []string{id, AnnotationPIDNamespace, `\xff`}},
		{name: "non-UTF-8 foreign value is ignored", annotations: map[string]string{"io.x": "\xff"}, want: Request{Pod: own}},
		{name: "pid namespace", annotations: map[string]string{AnnotationPIDNamespace: "container:sandbox1"}, want: Request{PIDNamespace: "container:sandbox1", Pod: own}},
		{name: "idmap-skip one", annotations: map[string]string{AnnotationIdmapSkip: "/data"}, want: Request{IdmapSkip: []string{"/data"}, Pod: own}},
		{name: "idmap-skip split and trimmed", annotations: map[string]string{AnnotationIdmapSkip: " /a, /b c ,,/d,\t"}, want: Request{IdmapSkip: []string{"/a", "/b c", "/d"}, Pod: own}},
		{name: "idmap-skip empty", annotations: map[string]string{AnnotationIdmapSkip: " , ,"}, want: Request{Pod: own}},
		{
			name:        "unknown keys under the prefix, sorted",
			annotations: map[string]string{Prefix + "usern": "auto", Prefix + "zzz": "", Prefix + "aaa": "1", Prefix: "bare prefix"},
			want:        Request{Unknown: []string{Prefix, Prefix + "aaa", Prefix + "usern", Prefix + "zzz"}, Pod: own},
		},
		{
			name: "keys outside the prefix are ignored",
			annotations: map[string]string{
				"runc-userns.io.userns":            "bogus",
				"RUNC-USERNS.IO/userns":            "bogus",
				"x.runc-userns.io/userns":          "bogus",
				"io.kubernetes.cri.container-name": "app",
			},
			want: Request{Pod: own},
		},
		{name: "idmap-skipped is ours, informational", annotations: map[string]string{AnnotationIdmapSkipped: "/data,/logs"}, want: Request{Pod: own}},
		{name: "stamp", annotations: map[string]string{AnnotationStamp: stamp.Encode()}, want: Request{Stamp: stamp, Pod: own}},
		{name: "bad stamp", annotations: map[string]string{AnnotationStamp: "{"}, wantErr: []string{id, AnnotationStamp}},
		{name: "stamp of a newer version", annotations: map[string]string{AnnotationStamp: `{"v":3}`}, wantErr: []string{id, AnnotationStamp, "version 3"}},
		{
			name: "everything",
			annotations: map[string]string{
				AnnotationUserns:       "auto",
				AnnotationPIDNamespace: "container:p",
				AnnotationIdmapSkip:    "/a",
				AnnotationStamp:        stamp.Encode(),
				Prefix + "future":      "x",
				CRIContainerType:       "container",
				CRISandboxID:           "pod1",
			},
			want: Request{Userns: UsernsAuto, PIDNamespace: "container:p", IdmapSkip: []string{"/a"}, Stamp: stamp, Unknown: []string{Prefix + "future"}, Pod: Pod{Owner: "pod1", InPod: true}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := ParseRequest(id, c.annotations)
			if c.wantErr != nil {
				if err == nil {
					t.Fatalf("ParseRequest = %+v, want an error", req)
				}
				if !errors.Is(err, ErrBadAnnotation) {
					t.Errorf("error %q does not wrap ErrBadAnnotation", err)
				}
				for _, s := range c.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseRequest: %v", err)
			}
			if !reflect.DeepEqual(req, c.want) {
				t.Errorf("ParseRequest:\n got %+v\nwant %+v", req, c.want)
			}
		})
	}
}

func TestPodOf(t *testing.T) {
	const id, pod = "c1", "sandbox1"
	cases := []struct {
		name        string
		annotations map[string]string
		want        Pod
	}{
		{"no pod annotations", map[string]string{"foo": "bar"}, Pod{Owner: id, Sandbox: true}},
		{"nil map", nil, Pod{Owner: id, Sandbox: true}},
		{"containerd sandbox", map[string]string{CRIContainerType: "sandbox", CRISandboxID: id}, Pod{Owner: id, Sandbox: true, InPod: true}},
		{"containerd container", map[string]string{CRIContainerType: "container", CRISandboxID: pod}, Pod{Owner: pod, InPod: true}},
		{"containerd sandbox without its id", map[string]string{CRIContainerType: "sandbox"}, Pod{Owner: id, Sandbox: true, InPod: true}},
		{"containerd container without a sandbox id", map[string]string{CRIContainerType: "container"}, Pod{Owner: id, Sandbox: true, InPod: true}},
		{"containerd sandbox id only", map[string]string{CRISandboxID: pod}, Pod{Owner: pod, InPod: true}},
		{"containerd sandbox id is own id", map[string]string{CRIContainerType: "container", CRISandboxID: id}, Pod{Owner: id, Sandbox: true, InPod: true}},
		{"CRI-O sandbox", map[string]string{CRIOContainerType: "sandbox", CRIOSandboxID: id}, Pod{Owner: id, Sandbox: true, InPod: true}},
		{"CRI-O container", map[string]string{CRIOContainerType: "container", CRIOSandboxID: pod}, Pod{Owner: pod, InPod: true}},
		{
			"containerd wins over CRI-O",
			map[string]string{CRIContainerType: "container", CRISandboxID: pod, CRIOContainerType: "sandbox", CRIOSandboxID: id},
			Pod{Owner: pod, InPod: true},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := PodOf(id, c.annotations); got != c.want {
				t.Errorf("PodOf = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestStampRoundTrip(t *testing.T) {
	cases := []struct {
		name  string
		stamp Stamp
	}{
		{"minimal", Stamp{Version: 1}},
		{"full", Stamp{
			Version: 1, Owner: "pod1", Root: "/run/containerd/runc/k8s.io", StateDir: "/run/runc-userns",
			Runtime: "/usr/sbin/runc", HostID: 4294901760, Size: 65536,
			UsernsPath: "/run/runc-userns/pods/pod1/userns", Mappings: true,
			Rootfs: "rootfs", Staged: "/run/runc-userns/containers/abc/c1/rootfs",
		}},
		{"characters JSON escapes", Stamp{Version: 1, Owner: `<a&b>"\`, Rootfs: "é\u2028\n"}},
		{"mounts", Stamp{Version: 1, Owner: "p", Mounts: json.RawMessage(`[{"destination":"/proc","type":"proc","source":"proc"}]`)}},
		{"bound", Stamp{Version: StampVersion, Owner: "p", ID: "c1", Root: "/run/runc", Bundle: "/run/b/c1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := c.stamp.Encode()
			got, err := DecodeStamp(v)
			if err != nil {
				t.Fatalf("DecodeStamp(%s): %v", v, err)
			}
			if !reflect.DeepEqual(*got, c.stamp) {
				t.Errorf("round trip:\n got %+v\nwant %+v", *got, c.stamp)
			}
		})
	}
}

func TestDecodeStampErrors(t *testing.T) {
	cases := []struct {
		name, value, mention string
	}{
		{"not JSON", "v1", AnnotationStamp},
		{"empty", "", AnnotationStamp},
		{"truncated", `{"v":1`, AnnotationStamp},
		{"no version", `{}`, "version 0"},
		{"null", `null`, "version 0"},
		{"newer version", `{"v":3,"owner":"p"}`, "version 3"},
		{"negative version", `{"v":-1}`, "version -1"},
		{"version as a string", `{"v":"1"}`, AnnotationStamp},
		{"hostID overflow", `{"v":1,"hostID":4294967296}`, AnnotationStamp},
		{"array", `[1]`, AnnotationStamp},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := DecodeStamp(c.value)
			if err == nil {
				t.Fatalf("DecodeStamp(%q) = %+v, want an error", c.value, s)
			}
			if !errors.Is(err, ErrBadAnnotation) {
				t.Errorf("error %q does not wrap ErrBadAnnotation", err)
			}
			if !strings.Contains(err.Error(), c.mention) {
				t.Errorf("error %q does not mention %q", err, c.mention)
			}
		})
	}
}

// The stamp is ours, and a second create of the same bundle must be able to
// read it back: it now carries the spec's whole mounts array, which for a
// pod with a dozen volumes is well over MaxAnnotationValue. Currently
// FAILS: ParseRequest applies the 4096-byte bound meant for values pod
// authors control to AnnotationStamp too, and refuses our own stamp.
func TestParseRequestReadsBackItsOwnStamp(t *testing.T) {
	var base struct {
		Mounts []specs.Mount `json:"mounts"`
	}
	if err := json.Unmarshal(readTestdata(t, "containerd-spec.json"), &base); err != nil {
		t.Fatal(err)
	}
	const kubelet = "/var/lib/kubelet/pods/0f6e4c0a-6b1d-4e55-9a8e-3c2d1b0a9f8e/volumes"
	cases := []struct {
		name   string
		mounts []specs.Mount
	}{
		{"containerd spec", base.Mounts},
		{"pod with ten more volumes", func() []specs.Mount {
			ms := append([]specs.Mount(nil), base.Mounts...)
			for i := range 10 {
				ms = append(ms, specs.Mount{
					Destination: fmt.Sprintf("/etc/app/config-%d", i),
					Type:        "bind",
					Source:      fmt.Sprintf("%s/kubernetes.io~configmap/app-config-%d", kubelet, i),
					Options:     []string{"rbind", "rprivate", "ro"},
				})
			}
			return ms
		}()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mounts, err := json.Marshal(c.mounts)
			if err != nil {
				t.Fatal(err)
			}
			stamp := &Stamp{
				Version: 1, Owner: "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b",
				Root: "/run/containerd/runc/k8s.io", StateDir: "/run/runc-userns", Runtime: "/usr/sbin/runc",
				HostID: 2147483648, Size: 65536, UsernsPath: "/run/runc-userns/pods/9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b/userns",
				Mappings: true, Rootfs: "rootfs", Staged: "/run/runc-userns/containers/0a1b2c3d4e5f/c1/rootfs",
				Mounts: mounts,
			}
			v := stamp.Encode()
			req, err := ParseRequest("c1", map[string]string{AnnotationStamp: v})
			if err != nil {
				t.Fatalf("ParseRequest of our own %d-byte stamp: %v", len(v), err)
			}
			if req.Stamp == nil || !reflect.DeepEqual(*req.Stamp, *stamp) {
				t.Errorf("stamp read back as %+v", req.Stamp)
			}
		})
	}
}

// FuzzParseRequest builds an annotation map from a few fuzzed strings;
// prefixed puts the first key under our prefix so that the fuzzer reaches
// the value checks quickly.
func FuzzParseRequest(f *testing.F) {
	f.Add("c1", "userns", "auto", CRISandboxID, "p", true)
	f.Add("c1", "userns", " host ", CRIOContainerType, "sandbox", true)
	f.Add("c1", "idmap-skip", "/a,,/b", AnnotationUserns, "x", true)
	f.Add("c1", "stamp", `{"v":1,"hostID":1}`, CRIContainerType, "container", true)
	f.Add("c1", "usern", "auto", "other", "\xff", true)
	f.Add("", AnnotationPIDNamespace, "container:\xff", "", "", false)
	f.Fuzz(func(t *testing.T, id, k1, v1, k2, v2 string, prefixed bool) {
		if prefixed {
			k1 = Prefix + k1
		}
		m := map[string]string{k1: v1, k2: v2}
		if err := CheckPodIdentity(id, m); err != nil && (!errors.Is(err, ErrBadAnnotation) || !strings.Contains(err.Error(), "container "+id)) {
			t.Fatalf("CheckPodIdentity error %q: not ErrBadAnnotation, or does not name container %q", err, id)
		}
		req, err := ParseRequest(id, m)
		if err != nil {
			if !errors.Is(err, ErrBadAnnotation) {
				t.Fatalf("error %q does not wrap ErrBadAnnotation", err)
			}
			if !strings.Contains(err.Error(), "container "+id) {
				t.Fatalf("error %q does not name container %q", err, id)
			}
			return
		}
		if req.Pod != PodOf(id, m) {
			t.Fatalf("Pod %+v, PodOf says %+v", req.Pod, PodOf(id, m))
		}
		switch req.Userns {
		case UsernsUnset, UsernsAuto, UsernsHost:
		default:
			t.Fatalf("Userns %q", req.Userns)
		}
		if !slices.IsSorted(req.Unknown) {
			t.Fatalf("Unknown not sorted: %q", req.Unknown)
		}
		for _, k := range req.Unknown {
			switch {
			case !strings.HasPrefix(k, Prefix):
				t.Fatalf("Unknown has %q, not under %s", k, Prefix)
			case k == AnnotationUserns, k == AnnotationPIDNamespace, k == AnnotationIdmapSkip, k == AnnotationStamp, k == AnnotationIdmapSkipped:
				t.Fatalf("Unknown has the known key %q", k)
			}
		}
		for _, p := range req.IdmapSkip {
			if p == "" || p != strings.TrimSpace(p) || strings.Contains(p, ",") {
				t.Fatalf("IdmapSkip entry %q", p)
			}
		}
		if req.Stamp != nil && req.Stamp.Version != 1 {
			t.Fatalf("accepted stamp version %d", req.Stamp.Version)
		}
	})
}

func BenchmarkParseRequest(b *testing.B) {
	const id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	annotations := map[string]string{
		CRIContainerType:                      "container",
		CRISandboxID:                          "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
		"io.kubernetes.cri.container-name":    "app",
		"io.kubernetes.cri.image-name":        "docker.io/library/nginx:1.27",
		"io.kubernetes.cri.sandbox-name":      "web-7d9c5b6f4-x2l8q",
		"io.kubernetes.cri.sandbox-namespace": "default",
		"io.kubernetes.cri.sandbox-uid":       "6f1c0c52-3a4e-4b8e-9d55-8b2f0a7b3c1d",
		AnnotationUserns:                      "auto",
		AnnotationIdmapSkip:                   "/var/run/secrets/kubernetes.io/serviceaccount, /etc/hosts",
		AnnotationStamp:                       (&Stamp{Version: 1, Owner: "pod", Root: "/run/containerd/runc/k8s.io", StateDir: "/run/runc-userns", HostID: 2147483648, Size: 65536, UsernsPath: "/run/runc-userns/pods/pod/userns", Mappings: true}).Encode(),
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRequest(id, annotations); err != nil {
			b.Fatal(err)
		}
	}
}

func TestPodCgroup(t *testing.T) {
	cases := []struct{ path, want string }{
		{"", ""},
		{"  ", "."},
		// cgroupfs: containerd, CRI-O and podman under kubelet's pod cgroup.
		{"/kubepods/besteffort/pod1234/0123abcd", "/kubepods/besteffort/pod1234"},
		{"/kubepods/burstable/pod1234/crio-0123abcd", "/kubepods/burstable/pod1234"},
		{"/k8s.io/0123abcd", "/k8s.io"},
		{"/solo", "/"},
		{"/kubepods//pod1234/x/", "/kubepods/pod1234"},
		{"relative/x", "relative"},
		// systemd: slice:prefix:name.
		{"kubepods-besteffort-pod1234.slice:cri-containerd:0123abcd", "kubepods-besteffort-pod1234.slice"},
		{"kubepods-pod1234.slice:crio:0123abcd", "kubepods-pod1234.slice"},
		{":crio:0123abcd", ""},
		// A cgroupfs path with colons is a path.
		{"/a:b:c/x", "/a:b:c"},
		{"a:b:c/x", "a:b:c"},
		{"a:b", "."},
	}
	for _, c := range cases {
		if got := PodCgroup(c.path); got != c.want {
			t.Errorf("PodCgroup(%q) = %q, want %q", c.path, got, c.want)
		}
	}
}

func TestCheckPodIdentity(t *testing.T) {
	cases := []struct {
		name    string
		ann     map[string]string
		wantErr string
	}{
		{name: "none", ann: map[string]string{"other": "x"}},
		{name: "containerd's", ann: map[string]string{CRIContainerType: "container", CRISandboxID: "sb"}},
		{name: "CRI-O's", ann: map[string]string{CRIOContainerType: "sandbox", CRIOSandboxID: "sb"}},
		{name: "both", ann: map[string]string{CRIContainerType: "container", CRIOSandboxID: "sb"},
			wantErr: "container c carries both containerd's pod annotations (io.kubernetes.cri.container-type) and CRI-O's (io.kubernetes.cri-o.SandboxID)"},
		{name: "empty sandbox ID", ann: map[string]string{CRIOContainerType: "container", CRIOSandboxID: ""},
			wantErr: "container c: io.kubernetes.cri-o.SandboxID is present but empty"},
		{name: "blank type", ann: map[string]string{CRIContainerType: " ", CRISandboxID: "sb"},
			wantErr: "container c: io.kubernetes.cri.container-type is present but empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckPodIdentity("c", c.ann)
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrBadAnnotation) || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("CheckPodIdentity = %v, want ErrBadAnnotation with %q", err, c.wantErr)
			}
		})
	}
}

func FuzzPodCgroup(f *testing.F) {
	for _, p := range []string{"", " ", "/kubepods/pod1/x", "kubepods-pod1.slice:crio:x", ":crio:x", "a:b", "/a:b:c/x", "a:b:c/x", "../x", "/", ".", "\xff:\x00:/"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got := PodCgroup(p)
		if p == "" {
			if got != "" {
				t.Fatalf("PodCgroup(%q) = %q, want none", p, got)
			}
			return
		}
		if got == "" {
			return // systemd form without a slice
		}
		// Another container beside it (same parent, another name) is of the
		// same pod, in the driver's form that got is in.
		sibling := filepath.Join(got, "other")
		if strings.Count(p, ":") == 2 && !strings.Contains(p, "/") {
			sibling = got + ":prefix:other"
		}
		if again := PodCgroup(sibling); again != got {
			t.Fatalf("PodCgroup(%q) = %q, but its sibling %q has %q", p, got, sibling, again)
		}
	})
}
