package main

import (
	"fmt"
	"math"
	"sort"
)

// paired is the median, over interleaved rounds, of a variant's time
// minus the reference's in the same round, with a distribution-free 95%
// confidence interval for that median. Rounds run back to back, so a
// round's pair shares the host's state (its load, a neighbour's burst);
// the difference of two medians does not cancel that drift, and on a
// noisy VM it moved by 1-2 ms from run to run where the paired median did
// not.
type paired struct {
	median, lo, hi float64
	ok             bool // false: fewer rounds than a 95% interval needs (6)
}

// pairedDiff pairs x[i] with ref[i] (the same round). The interval is
// the classic one for a median from order statistics: [d(k), d(n+1-k)]
// of the sorted differences, k the largest rank with P(B < k) <= 2.5%
// for B ~ Binomial(n, 1/2), which covers the median with probability
// >= 95% whatever the differences' distribution.
func pairedDiff(x, ref []float64) (paired, error) {
	if len(x) != len(ref) {
		return paired{}, fmt.Errorf("paired: %d rounds against %d", len(x), len(ref))
	}
	d := make([]float64, len(x))
	for i := range x {
		d[i] = x[i] - ref[i]
	}
	sort.Float64s(d)
	p := paired{median: median(d)}
	if k := ciRank(len(d)); k > 0 {
		p.lo, p.hi, p.ok = d[k-1], d[len(d)-k], true
	}
	return p, nil
}

// ciRank is the k above (1-based), or 0 when even [d(1), d(n)] covers the
// median with less than 95% (n < 6).
func ciRank(n int) int {
	k, cdf := 0, 0.0
	for j := 0; j <= n/2; j++ {
		cdf += binomHalf(n, j)
		if cdf > 0.025 {
			break
		}
		k = j + 1
	}
	return k
}

// binomHalf is P(B = j) for B ~ Binomial(n, 1/2), through log-gamma so
// that n in the thousands neither overflows nor underflows early.
func binomHalf(n, j int) float64 {
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	return math.Exp(lg(n) - lg(j) - lg(n-j) - float64(n)*math.Ln2)
}

func (p paired) String() string {
	if !p.ok {
		return fmt.Sprintf("%+.2f", p.median)
	}
	return fmt.Sprintf("%+.2f [%+.2f, %+.2f]", p.median, p.lo, p.hi)
}
