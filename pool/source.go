package pool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// SourceEnv is where ResolveRanges looks for subordinate IDs.
type SourceEnv struct {
	// Getsubids is the getsubids binary (shadow >= 4.11), which also sees
	// ranges from NSS (SSSD, FreeIPA); "" reads Subuid and Subgid instead.
	Getsubids string
	// Passwd resolves the subid user's uid, for file entries by uid.
	Passwd string
	Subuid string
	Subgid string
	// Timeout bounds each getsubids run (an NSS backend may hang); 0 is
	// 10 seconds.
	Timeout time.Duration
}

// getsubidsCandidates are looked at before $PATH: the wrapper is often run
// by a daemon with an empty or minimal PATH.
var getsubidsCandidates = []string{"/usr/bin/getsubids", "/bin/getsubids"}

// DefaultSourceEnv is the host's files and its getsubids, if any.
func DefaultSourceEnv() SourceEnv {
	return SourceEnv{
		Getsubids: findExecutable(getsubidsCandidates, "getsubids", os.Getenv("PATH")),
		Passwd:    "/etc/passwd",
		Subuid:    "/etc/subuid",
		Subgid:    "/etc/subgid",
	}
}

// findExecutable returns the first candidate that is an executable file,
// else the first one named name in the absolute directories of pathEnv
// (empty and relative entries, which would mean the working directory,
// are skipped), else "".
func findExecutable(candidates []string, name, pathEnv string) string {
	candidates = slices.Clone(candidates)
	for _, dir := range filepath.SplitList(pathEnv) {
		if filepath.IsAbs(dir) {
			candidates = append(candidates, filepath.Join(dir, name))
		}
	}
	for _, c := range candidates {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return c
		}
	}
	return ""
}

// ResolveRanges says where the pool's slots come from, first match wins:
//  1. explicit, the operator's configured ranges, if any;
//  2. the subordinate ranges of subidUser (getsubids if env has it, else
//     the subuid and subgid files), which must be the same for uids and
//     gids, since a pod maps both to the same host IDs;
//  3. DefaultRanges.
//
// The string describes the source, for logs and messages. The ranges are
// not validated: see Validate and CheckHost.
func ResolveRanges(explicit []Range, subidUser string, env SourceEnv) ([]Range, string, error) {
	if len(explicit) > 0 {
		return slices.Clone(explicit), "the configured ranges", nil
	}
	if subidUser != "" {
		uids, gids, how, err := subidRanges(subidUser, env)
		if err != nil {
			return nil, "", err
		}
		if len(uids) > 0 || len(gids) > 0 {
			uids, gids = sortedRanges(uids), sortedRanges(gids)
			if !slices.Equal(uids, gids) {
				return nil, "", errorf(ErrInvalidConfig, "subordinate IDs of %s (%s) differ: uids %s, gids %s: a pod maps its uids and gids to the same host IDs, so give %s the same subuid and subgid ranges", subidUser, how, rangeList(uids), rangeList(gids), subidUser)
			}
			return uids, fmt.Sprintf("the subordinate IDs of %s (%s)", subidUser, how), nil
		}
	}
	d := DefaultRanges()
	return d, "the default range " + rangeList(d), nil
}

func rangeList(rs []Range) string {
	if len(rs) == 0 {
		return "none"
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.String()
	}
	return strings.Join(s, " ")
}

// subidRanges returns user's subordinate uid and gid ranges and how they
// were found.
func subidRanges(user string, env SourceEnv) (uids, gids []Range, how string, err error) {
	if strings.HasPrefix(user, "-") || strings.ContainsAny(user, ": \t\n") {
		return nil, nil, "", errorf(ErrInvalidConfig, "subid user %q: not a user name", user)
	}
	if env.Getsubids != "" {
		if uids, err = runGetsubids(env, user); err == nil {
			gids, err = runGetsubids(env, "-g", user)
		}
		return uids, gids, "getsubids", err
	}
	passwd, err := readOptional(env.Passwd)
	if err != nil {
		return nil, nil, "", err
	}
	names := aliases(user, parseIDFile(passwd))
	if uids, err = subidFileRanges(env.Subuid, names); err == nil {
		gids, err = subidFileRanges(env.Subgid, names)
	}
	return uids, gids, env.Subuid + " and " + env.Subgid, err
}

// subidFileRanges returns the ranges of a subid file whose owner is one of
// names. A broken line of theirs is an error: skipping it would quietly
// move the pool somewhere else.
func subidFileRanges(path string, names map[string]bool) ([]Range, error) {
	data, err := readOptional(path)
	if err != nil {
		return nil, err
	}
	var out []Range
	for _, e := range parseSubidFile(data) {
		if !names[e.owner] {
			continue
		}
		if e.err != nil {
			return nil, errorf(ErrInvalidConfig, "%s: %v: fix the entry of %s", path, e.err, e.owner)
		}
		out = append(out, e.r)
	}
	return out, nil
}

// runGetsubids runs getsubids with args (the last one the user). Its exit
// status 1 with "Error fetching ranges" means the user has no ranges (or is
// unknown: shadow does not tell the two apart).
func runGetsubids(env SourceEnv, args ...string) ([]Range, error) {
	timeout := env.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Getsubids, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Once killed, do not wait long for a child of it that holds the pipes.
	cmd.WaitDelay = time.Second
	cmdline := strings.Join(append([]string{env.Getsubids}, args...), " ")
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 1 && strings.Contains(stderr.String(), "Error fetching ranges"):
		return nil, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: no answer in %s (is an NSS backend such as SSSD hanging?)", cmdline, timeout)
	case err != nil:
		return nil, fmt.Errorf("%s: %w: %s (check the subordinate ID setup, or set userns.ranges in the runc-userns config)", cmdline, err, strings.TrimSpace(stderr.String()))
	}
	ranges, err := parseGetsubids(stdout.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%s: unexpected output: %w", cmdline, err)
	}
	user := args[len(args)-1]
	out := make([]Range, len(ranges))
	for i, r := range ranges {
		if r.Owner != user {
			return nil, fmt.Errorf("%s: unexpected output: a range of %q", cmdline, r.Owner)
		}
		out[i] = r.Range
	}
	return out, nil
}
