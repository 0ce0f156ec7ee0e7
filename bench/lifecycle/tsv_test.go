package main

import (
	"strings"
	"testing"
)

func TestReadTSV(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		col      int
		want     map[string][]float64
		order    []string
		err      string
	}{
		{name: "two variants, column 3", in: "a\t1000\t5000\nb\t2000\t7000\na\t1500\t5500\nb\t2500\t8000\n", col: 3,
			want: map[string][]float64{"a": {5, 5.5}, "b": {7, 8}}, order: []string{"a", "b"}},
		{name: "labels with spaces keep their order", in: "runc x\t1\nz (pool)\t2\n", col: 2,
			want: map[string][]float64{"runc x": {0.001}, "z (pool)": {0.002}}, order: []string{"runc x", "z (pool)"}},
		{name: "unpaired rounds", in: "a\t1\nb\t2\na\t3\n", col: 2, err: "do not pair"},
		{name: "short line", in: "a\t1\n", col: 3, err: "line 1: 2 columns"},
		{name: "not a number", in: "a\tx\n", col: 2, err: "line 1, column 2"},
		{name: "empty", in: "", col: 2, err: "no measurements"},
		{name: "label column", in: "a\t1\n", col: 1, err: "column 1 is the label"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs, samples, err := readTSV(strings.NewReader(tc.in), tc.col)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vs {
				if v.name != tc.order[i] {
					t.Fatalf("variant %d is %q, want %q", i, v.name, tc.order[i])
				}
			}
			if len(vs) != len(tc.order) {
				t.Fatalf("%d variants, want %d", len(vs), len(tc.order))
			}
			for k, w := range tc.want {
				g := samples[k]
				if len(g) != len(w) {
					t.Fatalf("%s: %v, want %v", k, g, w)
				}
				for i := range w {
					if d := g[i] - w[i]; d > 1e-9 || d < -1e-9 {
						t.Fatalf("%s: %v, want %v", k, g, w)
					}
				}
			}
		})
	}
}
