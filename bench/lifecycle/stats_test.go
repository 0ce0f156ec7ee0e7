package main

import (
	"math"
	"testing"
)

func TestCIRank(t *testing.T) {
	// Reference ranks from the binomial tables (e.g. Conover, Practical
	// Nonparametric Statistics, table A3): the largest k with
	// P(Binomial(n, 1/2) < k) <= 0.025.
	for _, tc := range []struct {
		name string
		n, k int
	}{
		{"too few for any interval", 5, 0},
		{"smallest n with one", 6, 1},
		{"n=10", 10, 2},
		{"n=20", 20, 6},
		{"n=40", 40, 14},
		{"n=100", 100, 40},
		{"n=200", 200, 86},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if k := ciRank(tc.n); k != tc.k {
				t.Errorf("ciRank(%d) = %d, want %d", tc.n, k, tc.k)
			}
		})
	}
}

func TestCIRankCoverage(t *testing.T) {
	// What the rank promises, checked against the binomial itself for
	// every n up to 2000: below k at most 2.5%, below k+1 more.
	for n := 6; n <= 2000; n++ {
		k := ciRank(n)
		below := func(r int) float64 {
			s := 0.0
			for j := 0; j < r; j++ {
				s += binomHalf(n, j)
			}
			return s
		}
		if b := below(k); b > 0.025 {
			t.Fatalf("n=%d: P(B < %d) = %.4f > 0.025", n, k, b)
		}
		if b := below(k + 1); b <= 0.025 {
			t.Fatalf("n=%d: k=%d is not the largest: P(B < %d) = %.4f", n, k, k+1, b)
		}
	}
}

func TestPairedDiff(t *testing.T) {
	seq := func(n int, f func(i int) float64) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = f(i)
		}
		return s
	}
	for _, tc := range []struct {
		name        string
		x, ref      []float64
		med, lo, hi float64
		ok          bool
		wantErr     bool
	}{
		{
			name: "a drift both share cancels",
			// The reference drifts by 10 ms across the run; x is always
			// 1 ms slower in the same round.
			x:   seq(20, func(i int) float64 { return 40 + float64(i)/2 + 1 }),
			ref: seq(20, func(i int) float64 { return 40 + float64(i)/2 }),
			med: 1, lo: 1, hi: 1, ok: true,
		},
		{
			name: "interval from the sorted differences",
			// Differences 0..19: median 9.5, k=6 -> [d(6), d(15)] = [5, 14].
			x:   seq(20, func(i int) float64 { return float64(i) }),
			ref: make([]float64, 20),
			med: 9.5, lo: 5, hi: 14, ok: true,
		},
		{
			name: "too few rounds: median only",
			x:    []float64{3, 4, 5},
			ref:  []float64{1, 1, 1},
			med:  3,
		},
		{
			name:    "rounds that do not pair",
			x:       []float64{1, 2},
			ref:     []float64{1},
			wantErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := pairedDiff(tc.x, tc.ref)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
			if !near(p.median, tc.med) || p.ok != tc.ok || (tc.ok && (!near(p.lo, tc.lo) || !near(p.hi, tc.hi))) {
				t.Errorf("pairedDiff = %+v, want median %v [%v, %v] ok %v", p, tc.med, tc.lo, tc.hi, tc.ok)
			}
		})
	}
}
