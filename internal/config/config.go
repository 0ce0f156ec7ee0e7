package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/runc-userns/runc-userns/internal/oci"
	"github.com/runc-userns/runc-userns/pool"
)

// DefaultPath is where the operator's configuration lives; the environment
// variable EnvPath overrides it. A missing file means all defaults.
const (
	DefaultPath      = "/etc/runc-userns/config.json"
	EnvPath          = "RUNC_USERNS_CONFIG"
	DefaultStateDir  = "/run/runc-userns"
	DefaultSubidUser = "runc-userns"
	DefaultSlotSize  = 65536
)

// Mode says which pods get a user namespace.
type Mode string

const (
	ModeAnnotation Mode = "annotation" // only pods that ask (the default)
	ModeAlways     Mode = "always"     // every eligible pod; opt out with "host"
	ModeOff        Mode = "off"        // none; "auto" is refused
)

// Userns configures user namespace injection.
type Userns struct {
	Mode      Mode         `json:"mode,omitempty"`
	SubidUser string       `json:"subidUser,omitempty"`
	Ranges    []pool.Range `json:"ranges,omitempty"`
	SlotSize  uint32       `json:"slotSize,omitempty"`
	// RootfsChown: when a rootfs's filesystem cannot be idmapped, chown
	// it to the pod's range instead of failing (slow, writes the image,
	// one-way). Off by default.
	RootfsChown bool `json:"rootfsChown,omitempty"`
}

// Config is the operator's configuration.
type Config struct {
	// Runtime is the real runc; empty means search.
	Runtime  string `json:"runtime,omitempty"`
	StateDir string `json:"stateDir,omitempty"`
	Userns   Userns `json:"userns"`

	// Path is the file the configuration was read from ("" for defaults).
	Path string `json:"-"`
}

// Load reads the configuration named by $RUNC_USERNS_CONFIG, else
// DefaultPath. getenv is os.Getenv outside tests. For a file that reads
// but does not check out (an unknown key, a bad value), the error comes
// with the file's runtime and stateDir alone (lenient), which the calls
// other than a create go on with; otherwise an error comes with nil.
func Load(getenv func(string) string) (*Config, error) {
	path := getenv(EnvPath)
	if path == "" {
		path = DefaultPath
	}
	raw, _, err := oci.ReadRegular(path, MaxSize)
	switch {
	case errors.Is(err, os.ErrNotExist) && path == DefaultPath:
		c := &Config{}
		c.setDefaults()
		return c, nil
	case err != nil && path == DefaultPath:
		return nil, fmt.Errorf("read runc-userns config: %w (make it a readable regular file, or remove it to use the defaults)", err)
	case err != nil:
		return nil, fmt.Errorf("read runc-userns config: %w (set %s to a readable file, or unset it to use %s)", err, EnvPath, DefaultPath)
	}
	c, err := Parse(raw)
	if err != nil {
		err = fmt.Errorf("runc-userns config %s: %w", path, err)
		if c = lenient(raw); c != nil {
			c.Path = path
		}
		return c, err
	}
	c.Path = path
	return c, nil
}

// lenient reads only runtime and stateDir from raw, ignoring everything
// else; nil when even those are unusable (not JSON, a wrong type, a
// relative path).
func lenient(raw []byte) *Config {
	var keep struct {
		Runtime  string `json:"runtime"`
		StateDir string `json:"stateDir"`
	}
	if json.Unmarshal(raw, &keep) != nil {
		return nil
	}
	c := &Config{Runtime: keep.Runtime, StateDir: keep.StateDir}
	c.setDefaults()
	if c.checkPaths() != nil {
		return nil
	}
	return c
}

// MaxSize is the most of a config file read.
const MaxSize = 64 << 10

// Parse decodes and checks a configuration file's contents.
func Parse(raw []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%w (see the README for the keys)", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON object")
	}
	c.setDefaults()
	switch c.Userns.Mode {
	case ModeAnnotation, ModeAlways, ModeOff:
	default:
		return nil, fmt.Errorf("userns.mode %q: want %q, %q or %q", c.Userns.Mode, ModeAnnotation, ModeAlways, ModeOff)
	}
	if err := c.checkPaths(); err != nil {
		return nil, err
	}
	return &c, nil
}

// checkPaths wants stateDir (set: setDefaults ran) and runtime absolute,
// and cleans stateDir: one spelling of it everywhere, since paths are
// compared with it and walked up to it ("/run/runc-userns/" must not be
// another one).
func (c *Config) checkPaths() error {
	if c.StateDir[0] != '/' {
		return fmt.Errorf("stateDir %q: must be an absolute path", c.StateDir)
	}
	c.StateDir = filepath.Clean(c.StateDir)
	if c.Runtime != "" && c.Runtime[0] != '/' {
		return fmt.Errorf("runtime %q: must be an absolute path", c.Runtime)
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
	if c.Userns.Mode == "" {
		c.Userns.Mode = ModeAnnotation
	}
	if c.Userns.SubidUser == "" {
		c.Userns.SubidUser = DefaultSubidUser
	}
	if c.Userns.SlotSize == 0 {
		c.Userns.SlotSize = DefaultSlotSize
	}
}
