package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/runc-userns/runc-userns/internal/config"
	"github.com/runc-userns/runc-userns/internal/state"
	"github.com/runc-userns/runc-userns/pool"
)

// verbs are ours; runc has no subcommand by these names.
var verbs = map[string]bool{"pool": true, "doctor": true}

// IsVerb reports whether command is one of the operator's verbs, which Run
// handles, rather than a runc subcommand.
func IsVerb(command string) bool { return verbs[command] }

// Run runs the operator's verbs, argv being the whole command line
// (argv[0] the program); it returns the exit status. urfave/cli is fine
// here: runc's argv is never parsed with it.
func Run(argv []string) int {
	if err := newApp().Run(argv); err != nil {
		fmt.Fprintln(os.Stderr, "runc-userns:", err)
		return 1
	}
	return 0
}

// HelpTail is what runc-userns adds after runc's own --help: its commands
// (from the same definitions Run uses), its annotations and where to read
// more.
func HelpTail(annotations []string) string {
	var b strings.Builder
	b.WriteString("\nRUNC-USERNS:\n   Every command above is the real runc's. runc-userns adds:\n")
	w := tabwriter.NewWriter(&b, 0, 8, 3, ' ', 0)
	for _, c := range newApp().Commands {
		if len(c.Subcommands) == 0 {
			fmt.Fprintf(w, "   runc-userns %s %s\t%s\n", c.Name, c.ArgsUsage, c.Usage)
			continue
		}
		for _, sc := range c.Subcommands {
			fmt.Fprintf(w, "   runc-userns %s %s %s\t%s\n", c.Name, sc.Name, sc.ArgsUsage, sc.Usage)
		}
	}
	w.Flush()
	fmt.Fprintf(&b, "   Pod annotations: %s\n", strings.Join(annotations, ", "))
	b.WriteString("   Configuration, annotations and what each does: README.md of runc-userns.\n")
	return b.String()
}

func newApp() *cli.App {
	return &cli.App{
		Name:  "runc-userns",
		Usage: "runc-userns administration (every other command is runc's)",
		Commands: []*cli.Command{{
			Name:  "pool",
			Usage: "inspect and repair the user namespace pool",
			Subcommands: []*cli.Command{
				{
					Name:   "ls",
					Usage:  "list the ranges in use",
					Flags:  []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print a JSON array"}},
					Action: poolList,
				},
				{
					Name:   "gc",
					Usage:  "reclaim the ranges of pods none of whose containers exists any more (and rebuild a lost or corrupt pool state)",
					Action: poolGC,
				},
				{
					Name:      "release",
					Usage:     "return OWNER's range to the pool (and unpin its user namespace); refused while a container of OWNER is alive",
					ArgsUsage: "OWNER",
					Flags:     []cli.Flag{&cli.BoolFlag{Name: "force", Usage: "release it even while containers of OWNER are alive (they keep running on host IDs the next pod may get)"}},
					Action:    poolRelease,
				},
			},
		}, {
			Name:      "doctor",
			Usage:     "check that this node can give pods user namespaces (and that each PATH can be idmapped)",
			ArgsUsage: "[PATH...]",
			Flags:     []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print {\"ok\": bool, \"checks\": [...]}"}},
			Action:    doctorCmd,
		}},
	}
}

// OpenPool opens the pool for allocation: ranges resolved from the config
// (explicit, else the subid user's, else the default) and checked against
// the host's users, groups and other subordinate ranges.
func OpenPool(cfg *config.Config, stateDir string) (*pool.Pool, error) {
	ranges, source, err := pool.ResolveRanges(cfg.Userns.Ranges, cfg.Userns.SubidUser, pool.DefaultSourceEnv())
	if err != nil {
		return nil, err
	}
	if err := pool.Validate(ranges, cfg.Userns.SlotSize); err != nil {
		return nil, fmt.Errorf("user namespace pool from %s: %w", source, err)
	}
	host, err := pool.ReadHostIDs("/etc/passwd", "/etc/group", "/etc/subuid", "/etc/subgid", cfg.Userns.SubidUser)
	if err != nil {
		return nil, err
	}
	if err := pool.CheckHost(ranges, host); err != nil {
		return nil, fmt.Errorf("user namespace pool from %s: %w", source, err)
	}
	return pool.New(pool.Config{Ranges: ranges, SlotSize: cfg.Userns.SlotSize, StateDir: stateDir})
}

func adminConfig() (*config.Config, error) { return config.Load(os.Getenv) }

// adminPool is the operator config and the pool it names, for the pool verbs.
func adminPool() (*config.Config, *pool.Pool, error) {
	cfg, err := adminConfig()
	if err != nil {
		return nil, nil, err
	}
	p, err := pool.OpenExisting(cfg.StateDir)
	return cfg, p, err
}

func poolList(ctx *cli.Context) error {
	_, p, err := adminPool()
	if err != nil {
		return err
	}
	allocs, err := p.List()
	if err != nil {
		return err
	}
	if ctx.Bool("json") {
		if allocs == nil {
			allocs = []pool.Allocation{}
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(allocs)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "OWNER\tHOST IDS\tSIZE\tMEMBERS\tROOT\tALLOCATED")
	for _, a := range allocs {
		fmt.Fprintf(w, "%s\t%d-%d\t%d\t%d\t%s\t%s\n", a.Owner, a.HostID, uint64(a.HostID)+uint64(a.Size)-1, a.Size, len(a.Members), a.Root, a.Allocated.Format(time.RFC3339))
	}
	return w.Flush()
}

func poolRelease(ctx *cli.Context) error {
	if ctx.NArg() != 1 {
		return fmt.Errorf("pool release: want exactly one OWNER (see `runc-userns pool ls`), have %d", ctx.NArg())
	}
	owner := ctx.Args().First()
	cfg, p, err := adminPool()
	if err != nil {
		return err
	}
	if !ctx.Bool("force") {
		// Alive makes Release refuse while a member lives.
		log := logrus.New()
		log.SetOutput(os.Stderr)
		p.SetHooks(PoolHooks(cfg.StateDir, log))
	}
	if err := p.Release(owner); err != nil {
		if errors.Is(err, pool.ErrInUse) {
			err = fmt.Errorf("pool release: %w (or use --force)", err)
		}
		return err
	}
	return state.Layout(cfg.StateDir).UnpinPod(owner)
}

// poolGC reclaims the ranges whose containers are all gone (no runc state,
// or their init is dead) and no create of which is in flight, then removes
// in-flight markers left by killed creates.
func poolGC(ctx *cli.Context) error {
	if ctx.NArg() != 0 {
		return fmt.Errorf("pool gc takes no arguments, has %d", ctx.NArg())
	}
	cfg, p, err := adminPool()
	if err != nil {
		return err
	}
	log := logrus.New()
	log.SetOutput(os.Stderr)
	p.SetHooks(PoolHooks(cfg.StateDir, log))
	// Each step does what it can: one pod whose leftovers cannot be
	// removed must not keep the others' ranges, pins and markers.
	var errs []error
	dead, err := p.Reclaim()
	for _, a := range dead {
		fmt.Printf("reclaimed %s %d-%d (members %v, root %s)\n", a.Owner, a.HostID, uint64(a.HostID)+uint64(a.Size)-1, a.Members, a.Root)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("pool gc: %w", err))
	}
	lay := state.Layout(cfg.StateDir)
	pins, err := sweepPins(p, lay)
	for _, owner := range pins {
		fmt.Printf("unpinned pod %s: it holds no range\n", owner)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("pool gc: pinned user namespaces: %w", err))
	}
	n, err := lay.SweepInflight()
	if err != nil {
		errs = append(errs, fmt.Errorf("pool gc: in-flight markers: %w", err))
	}
	fmt.Printf("%d ranges reclaimed, %d pinned user namespaces of pods without a range dropped, %d stale in-flight markers removed\n", len(dead), len(pins), n)
	if len(errs) > 0 {
		return fmt.Errorf("%w; fix what is named, then run pool gc again", errors.Join(errs...))
	}
	return nil
}

// sweepPins drops the pinned user namespace of every pod that holds no
// range. A pod's pin goes with its range (delete, reclaim, `pool
// release`); it is left behind when the range goes without it: a state
// rebuilt after the pod's containers were deleted behind the wrapper's
// back, or a delete killed between the two. A pin keeps the namespace
// alive, so an orphan is a leak. The sweep runs under the pool's lock
// (pool.Sweep): a create pins only after Allocate has recorded its range,
// so no pin of a pod that holds one, or is getting one, is touched.
func sweepPins(p *pool.Pool, lay state.Layout) ([]string, error) {
	var dropped []string
	err := p.Sweep(func(held map[string]bool) error {
		entries, err := os.ReadDir(lay.PodsDir())
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		var errs []error
		for _, e := range entries {
			if held[e.Name()] {
				continue
			}
			if err := lay.UnpinPod(e.Name()); err != nil {
				errs = append(errs, fmt.Errorf("pod %s: %w", e.Name(), err))
				continue
			}
			dropped = append(dropped, e.Name())
		}
		return errors.Join(errs...)
	})
	return dropped, err
}
