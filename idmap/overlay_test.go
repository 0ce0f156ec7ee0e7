package idmap

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseOverlay(t *testing.T) {
	cases := []struct {
		name    string
		opts    string
		want    *Overlay
		wantErr string
		errIs   error
	}{
		{
			name: "containerd snapshot: two lowers, upper, work, index=off",
			opts: "rw,lowerdir=/s/2/fs:/s/1/fs,upperdir=/s/3/fs,workdir=/s/3/work,index=off",
			want: &Overlay{Lower: []string{"/s/2/fs", "/s/1/fs"}, Upper: "/s/3/fs", Work: "/s/3/work", Other: []string{"index=off"}},
		},
		{
			name: "read-only overlay: lowers only",
			opts: "ro,lowerdir=/a:/b",
			want: &Overlay{Lower: []string{"/a", "/b"}},
		},
		{
			name: "other options keep their order",
			opts: "lowerdir=/a,upperdir=/u,workdir=/w,xino=off,redirect_dir=on,userxattr",
			want: &Overlay{Lower: []string{"/a"}, Upper: "/u", Work: "/w", Other: []string{"xino=off", "redirect_dir=on", "userxattr"}},
		},
		{
			name: "containerd, many layers: lowerdir relative to its snapshots directory",
			opts: "rw,lowerdir=3/fs:2/fs:1/fs,upperdir=/s/4/fs,workdir=/s/4/work",
			want: &Overlay{Lower: []string{"3/fs", "2/fs", "1/fs"}, Upper: "/s/4/fs", Work: "/s/4/work"},
		},
		{
			name: "fsconfig (Linux 6.8): one lowerdir+ a layer, top first",
			opts: "rw,lowerdir+=/s/2/fs,lowerdir+=/s/1/fs,upperdir=/s/3/fs,workdir=/s/3/work",
			want: &Overlay{Lower: []string{"/s/2/fs", "/s/1/fs"}, Upper: "/s/3/fs", Work: "/s/3/work"},
		},
		{name: "lowerdir+ keeps a ':' in its path", opts: "lowerdir+=/a:b", want: &Overlay{Lower: []string{"/a:b"}}},
		{name: "data-only layer (datadir+)", opts: "lowerdir+=/a,datadir+=/d", wantErr: "data-only layers are not supported"},
		{name: "empty lowerdir+", opts: "lowerdir+=", wantErr: "data-only or empty layers"},
		{name: "escaped lowerdir+", opts: `lowerdir+=/a\054b`, wantErr: "has escaped characters"},
		{name: "no lowerdir", opts: "rw,relatime", errIs: ErrNotOverlay},
		{name: "empty", opts: "", errIs: ErrNotOverlay},
		{name: "escaped path", opts: `lowerdir=/a\:b,upperdir=/u,workdir=/w`, wantErr: "has escaped characters"},
		{name: "data-only layer (::)", opts: "lowerdir=/a::/b", wantErr: "data-only or empty layers"},
		{name: "empty lowerdir", opts: "lowerdir=", wantErr: "data-only or empty layers"},
		{name: "upper without work", opts: "lowerdir=/a,upperdir=/u", wantErr: `has upperdir "/u" but workdir ""`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseOverlay(c.opts)
			switch {
			case c.errIs != nil:
				if !errors.Is(err, c.errIs) {
					t.Fatalf("ParseOverlay error = %v, want %v", err, c.errIs)
				}
			case c.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("ParseOverlay error = %v, want one mentioning %q", err, c.wantErr)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Fatalf("ParseOverlay = %+v, want %+v", got, c.want)
				}
			}
		})
	}
}

func TestOverlayOptions(t *testing.T) {
	o, err := ParseOverlay("rw,lowerdir=/s/2/fs:/s/1/fs,upperdir=/s/3/fs,workdir=/s/3/work,index=off")
	if err != nil {
		t.Fatal(err)
	}
	got := o.Options([]string{"/L/0", "/L/1"})
	want := "lowerdir=/L/0:/L/1,upperdir=/s/3/fs,workdir=/s/3/work,index=off"
	if got != want {
		t.Fatalf("Options = %q, want %q", got, want)
	}
	ro := &Overlay{Lower: []string{"/a"}}
	if got := ro.Options([]string{"/L/0"}); got != "lowerdir=/L/0" {
		t.Fatalf("Options of a read-only overlay = %q", got)
	}
}

// FuzzParseOverlay: mountinfo options are written by the kernel from paths
// a pod's image may influence; the parser must never panic, and whatever
// it accepts must render back to options that parse to the same layers.
func FuzzParseOverlay(f *testing.F) {
	for _, s := range []string{
		"rw,lowerdir=/s/2/fs:/s/1/fs,upperdir=/s/3/fs,workdir=/s/3/work,index=off",
		"ro,lowerdir=/a:/b",
		"lowerdir=/a::/b",
		`lowerdir=/a\,b`,
		"lowerdir=/a,upperdir=/u",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, opts string) {
		o, err := ParseOverlay(opts)
		if err != nil {
			return
		}
		if len(o.Lower) == 0 {
			t.Fatalf("accepted %q with no lower layer", opts)
		}
		back, err := ParseOverlay(o.Options(o.Lower))
		if err != nil {
			t.Fatalf("Options of %q = %q does not parse: %v", opts, o.Options(o.Lower), err)
		}
		if !reflect.DeepEqual(back.Lower, o.Lower) || back.Upper != o.Upper || back.Work != o.Work {
			t.Fatalf("round trip of %q: %+v, then %+v", opts, o, back)
		}
	})
}

func TestOverlayIndexOn(t *testing.T) {
	cases := []struct {
		name          string
		other         []string
		kernelDefault bool
		want          bool
	}{
		{name: "containerd: index=off whatever the kernel's default", other: []string{"index=off"}, kernelDefault: true, want: false},
		{name: "podman on a kernel whose default is off: no option", other: []string{"nodev"}, kernelDefault: false, want: false},
		{name: "no option, the kernel's default on (CONFIG_OVERLAY_FS_INDEX)", other: nil, kernelDefault: true, want: true},
		{name: "index=on explicitly", other: []string{"index=on"}, kernelDefault: false, want: true},
		{name: "the last index= counts, as the kernel reads it", other: []string{"index=on", "xino=off", "index=off"}, kernelDefault: false, want: false},
		{name: "other options that mention index do not count", other: []string{"nfs_export=off", "index"}, kernelDefault: false, want: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := &Overlay{Lower: []string{"/a"}, Other: c.other}
			if got := o.IndexOn(c.kernelDefault); got != c.want {
				t.Fatalf("IndexOn(%v) of %q = %v, want %v", c.kernelDefault, c.other, got, c.want)
			}
		})
	}
}

func TestOverlayVolatile(t *testing.T) {
	for _, c := range []struct {
		other []string
		want  bool
	}{
		{[]string{"nodev", "volatile"}, true},
		{[]string{"index=off"}, false},
		{[]string{"volatile=on"}, false},
		{nil, false},
	} {
		if got := (&Overlay{Other: c.other}).Volatile(); got != c.want {
			t.Errorf("Volatile of %q = %v, want %v", c.other, got, c.want)
		}
	}
}

func TestUpperBase(t *testing.T) {
	cases := []struct {
		name, upper, work  string
		base, rUpper, rWrk string
		wantErr            string
	}{
		{name: "containers/storage: <id>/diff beside <id>/work.runc-userns", upper: "/g/overlay/c1/diff", work: "/g/overlay/c1/work.runc-userns", base: "/g/overlay/c1", rUpper: "diff", rWrk: "work.runc-userns"},
		{name: "containerd: snapshots/<id>/fs beside snapshots/<id>/work.runc-userns", upper: "/s/snapshots/61/fs", work: "/s/snapshots/61/work.runc-userns", base: "/s/snapshots/61", rUpper: "fs", rWrk: "work.runc-userns"},
		{name: "apart: their nearest common ancestor", upper: "/a/b/up/fs", work: "/a/c/work.runc-userns", base: "/a", rUpper: "b/up/fs", rWrk: "c/work.runc-userns"},
		{name: "a shared name prefix is no common directory", upper: "/data/up", work: "/data2/work.runc-userns", base: "/", rUpper: "data/up", rWrk: "data2/work.runc-userns"},
		{name: "work inside upper", upper: "/a/up", work: "/a/up/work", wantErr: "one inside the other"},
		{name: "upper inside work", upper: "/a/w/up", work: "/a/w", wantErr: "one inside the other"},
		{name: "the same directory", upper: "/a/u", work: "/a/u", wantErr: "one inside the other"},
		{name: "relative upper", upper: "c/diff", work: "/g/c/work", wantErr: "absolute, clean"},
		{name: "unclean work", upper: "/g/c/diff", work: "/g/c/../c/work", wantErr: "absolute, clean"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base, ru, rw, err := upperBase(c.upper, c.work)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("upperBase(%q, %q) error = %v, want one mentioning %q", c.upper, c.work, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if base != c.base || ru != c.rUpper || rw != c.rWrk {
				t.Fatalf("upperBase(%q, %q) = %q, %q, %q; want %q, %q, %q", c.upper, c.work, base, ru, rw, c.base, c.rUpper, c.rWrk)
			}
		})
	}
}
