package web

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
)

// instance is the BOSH instance a VM is, from the agent's apply spec.
type instance struct {
	Deployment string // e.g. "cf"
	Group      string // the instance group, e.g. "diego-cell"
	Index      string // e.g. "3"; "" when the spec has none
	ID         string // the instance's UUID
	AZ         string // "" when the spec does not say
}

// Name is the instance as bosh instances names it: GROUP/ID, else
// GROUP/INDEX.
func (i instance) Name() string {
	switch {
	case i.Group == "":
		return ""
	case i.ID != "":
		return i.Group + "/" + i.ID
	case i.Index != "":
		return i.Group + "/" + i.Index
	}
	return i.Group
}

// maxSpec bounds what is read of the spec file: the fields wanted come
// with the packages and properties of every job.
const maxSpec = 8 << 20

// parseSpec reads the identity from an apply spec. The agent keeps the
// director's deployment, job (the instance group), index and id; az is
// read when the spec has it (the director sends it; agents that keep the
// spec through their own type drop it).
func parseSpec(r io.Reader) (instance, error) {
	var spec struct {
		Deployment string                `json:"deployment"`
		Job        struct{ Name string } `json:"job"`
		Name       string                `json:"name"`
		Index      json.RawMessage       `json:"index"`
		ID         string                `json:"id"`
		AZ         string                `json:"az"`
	}
	if err := json.NewDecoder(io.LimitReader(r, maxSpec)).Decode(&spec); err != nil {
		return instance{}, err
	}
	in := instance{Deployment: spec.Deployment, Group: spec.Job.Name, ID: spec.ID, AZ: spec.AZ}
	if in.Group == "" {
		in.Group = spec.Name
	}
	if n, err := strconv.Atoi(string(spec.Index)); err == nil {
		in.Index = strconv.Itoa(n)
	}
	return in, nil
}

// specCache reads the spec file again only when it has changed (the agent
// rewrites it at each deploy while the daemon may go on running).
type specCache struct {
	path string
	mu   sync.Mutex
	mod  time.Time
	size int64
	in   instance
	err  error
}

// get returns the identity in the spec file, with an error when there is
// no spec file (not a BOSH VM) or it cannot be read.
func (c *specCache) get() (instance, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fi, err := os.Stat(c.path)
	if err != nil {
		c.mod, c.size, c.in, c.err = time.Time{}, 0, instance{}, err
		return c.in, err
	}
	if fi.ModTime().Equal(c.mod) && fi.Size() == c.size && c.err == nil {
		return c.in, nil
	}
	c.mod, c.size = fi.ModTime(), fi.Size()
	f, err := os.Open(c.path)
	if err != nil {
		c.err = err
		return instance{}, err
	}
	defer f.Close()
	c.in, c.err = parseSpec(f)
	if c.err != nil {
		c.err = fmt.Errorf("%s: %w", c.path, c.err)
	}
	return c.in, c.err
}
