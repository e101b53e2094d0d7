package main

import (
	"bufio"
	"encoding/json"
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
	f, err := os.Open(path)
	if err != nil {
		return imageConfig{}, err
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
	if err := sc.Err(); err != nil {
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
		ins, arg, _ := strings.Cut(l, " ")
		arg = strings.TrimSpace(arg)
		switch strings.ToUpper(ins) {
		case "COPY":
			if l != rootfsCopy || copied {
				return c, fmt.Errorf("%s: %q: the final stage copies exactly %q once", path, l, rootfsCopy)
			}
			copied = true
		case "ENV":
			k, v, ok := strings.Cut(arg, "=")
			if !ok || strings.ContainsAny(v, " \"'$") {
				return c, fmt.Errorf("%s: %q: want ENV KEY=value (one, unquoted)", path, l)
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
				return c, fmt.Errorf("%s: %q: want the exec form [\"…\"] (the image has no shell): %w", path, l, err)
			}
			if strings.ToUpper(ins) == "CMD" {
				c.Cmd = v
			} else {
				c.Entrypoint = v
			}
		case "LABEL":
			k, v, ok := strings.Cut(arg, "=")
			if !ok {
				return c, fmt.Errorf("%s: %q: want LABEL key=value", path, l)
			}
			if c.Labels == nil {
				c.Labels = map[string]string{}
			}
			c.Labels[k] = strings.Trim(v, `"`)
		default:
			return c, fmt.Errorf("%s: %q: instruction not supported in the final stage by tools/image", path, l)
		}
	}
	if !copied {
		return c, fmt.Errorf("%s: the final stage lacks %q", path, rootfsCopy)
	}
	return c, nil
}
