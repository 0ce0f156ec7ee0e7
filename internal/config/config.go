// Package config reads the operator's configuration file.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

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
// DefaultPath. getenv is os.Getenv outside tests.
func Load(getenv func(string) string) (*Config, error) {
	path := getenv(EnvPath)
	if path == "" {
		path = DefaultPath
	}
	raw, err := readConfig(path)
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
		return nil, fmt.Errorf("runc-userns config %s: %w", path, err)
	}
	c.Path = path
	return c, nil
}

// LoadLenient reads the configuration as Load does, but keeps only its
// runtime and stateDir and ignores everything else in the file: for the
// calls that must go on when the file has a mistake elsewhere (kill,
// delete, state of running pods), never for a create.
func LoadLenient(getenv func(string) string) (*Config, error) {
	path := getenv(EnvPath)
	if path == "" {
		path = DefaultPath
	}
	raw, err := readConfig(path)
	if err != nil {
		return nil, err
	}
	var c Config
	var keep struct {
		Runtime  string `json:"runtime"`
		StateDir string `json:"stateDir"`
	}
	if err := json.Unmarshal(raw, &keep); err != nil {
		return nil, err
	}
	c.Runtime, c.StateDir = keep.Runtime, keep.StateDir
	c.setDefaults()
	if err := c.checkPaths(); err != nil {
		return nil, err
	}
	c.Path = path
	return &c, nil
}

// FileKind names a file's type in words, for errors.
func FileKind(m os.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "regular file"
	case t&os.ModeDir != 0:
		return "directory"
	case t&os.ModeSymlink != 0:
		return "symbolic link"
	case t&os.ModeNamedPipe != 0:
		return "FIFO"
	case t&os.ModeSocket != 0:
		return "socket"
	case t&os.ModeCharDevice != 0:
		return "character device"
	case t&os.ModeDevice != 0:
		return "block device"
	}
	return "file of another type"
}

// MaxSize is the most of a config file read (the constructor's
// FP_CONFIG_MAX, fastpath.h).
const MaxSize = 64 << 10

// readConfig reads a regular file of at most MaxSize bytes: a FIFO or a
// device named by the environment must not hang or exhaust every call.
func readConfig(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is a %s, not a regular file", path, FileKind(st.Mode()))
	}
	raw, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err == nil && len(raw) > MaxSize {
		err = fmt.Errorf("%s is larger than %d bytes", path, MaxSize)
	}
	return raw, err
}

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
