package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// imageConfig is the part of an OCI image configuration the final stage
// sets.
type imageConfig struct {
	User         string              `json:"User,omitempty"`
	Env          []string            `json:"Env,omitempty"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"`
	Entrypoint   []string            `json:"Entrypoint,omitempty"`
	Cmd          []string            `json:"Cmd,omitempty"`
	WorkingDir   string              `json:"WorkingDir,omitempty"`
	Labels       map[string]string   `json:"Labels,omitempty"`
}

// rootfsCopy is the one instruction of the final stage that adds files:
// the tree the build stage laid out, which build lays out the same way.
const rootfsCopy = "COPY --from=build /rootfs/ /"

// finalStage reads the instructions after the last FROM of a Dockerfile
// into a configuration. It knows the few instructions an image of static
// binaries needs and refuses the others, so the Dockerfile and this tool
// cannot drift apart silently.
func finalStage(path string) (imageConfig, error) {
	lines, err := instructions(path)
	if err != nil {
		return imageConfig{}, err
	}
	last := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.ToUpper(l), "FROM ") {
			last = i
		}
	}
	if last < 0 || strings.ToLower(strings.TrimSpace(lines[last][5:])) != "scratch" {
		return imageConfig{}, fmt.Errorf("%s: the final stage must be FROM scratch (this tool pulls no base image)", path)
	}
	var c imageConfig
	var copied bool
	for _, l := range lines[last+1:] {
		if l == rootfsCopy && !copied {
			copied = true
			continue
		}
		if err := c.apply(l); err != nil {
			return c, fmt.Errorf("%s: %q: %w", path, l, err)
		}
	}
	if !copied {
		return c, fmt.Errorf("%s: the final stage lacks %q", path, rootfsCopy)
	}
	return c, nil
}

// instructions reads the instructions of a Dockerfile, one a line:
// comments and blank lines left out, continued lines joined.
func instructions(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	var cont string
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || (l == "" && cont == "") {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cont += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		lines = append(lines, cont+l)
		cont = ""
	}
	return lines, sc.Err()
}

// apply sets what instruction l of the final stage says in c (a COPY
// other than the one rootfsCopy is an error).
func (c *imageConfig) apply(l string) error {
	ins, arg, _ := strings.Cut(l, " ")
	arg = strings.TrimSpace(arg)
	switch strings.ToUpper(ins) {
	case "COPY":
		return fmt.Errorf("the final stage copies exactly %q once", rootfsCopy)
	case "ENV":
		k, v, ok := strings.Cut(arg, "=")
		if !ok || strings.ContainsAny(v, " \"'$") {
			return errors.New("want ENV KEY=value (one, unquoted)")
		}
		c.Env = append(c.Env, k+"="+v)
	case "USER":
		c.User = arg
	case "WORKDIR":
		c.WorkingDir = arg
	case "EXPOSE":
		c.ExposedPorts = map[string]struct{}{}
		for _, p := range strings.Fields(arg) {
			if !strings.Contains(p, "/") {
				p += "/tcp"
			}
			c.ExposedPorts[p] = struct{}{}
		}
	case "ENTRYPOINT", "CMD":
		var v []string
		if err := json.Unmarshal([]byte(arg), &v); err != nil {
			return fmt.Errorf("want the exec form [\"…\"] (the image has no shell): %w", err)
		}
		if strings.ToUpper(ins) == "CMD" {
			c.Cmd = v
		} else {
			c.Entrypoint = v
		}
	case "LABEL":
		k, v, ok := strings.Cut(arg, "=")
		if !ok {
			return errors.New("want LABEL key=value")
		}
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[k] = strings.Trim(v, `"`)
	default:
		return errors.New("instruction not supported in the final stage by tools/image")
	}
	return nil
}
