package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// apiTokenVar holds the HTTP API's bearer token: from the environment
// only (a flag would show in ps), the variable delayd reads.
const apiTokenVar = "DELAYQ_API_TOKEN"

// apiFlag is --api: delayd's HTTP API, which inspect and list read instead
// of HBase and Redis (embedded mode has neither).
type apiFlag struct{ addr string }

func (a *apiFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&a.addr, "api", "", "read through delayd's HTTP API at this URL or host:port (--roles …,api; embedded mode) instead of HBase and Redis; the token comes from "+apiTokenVar)
}

// set reports whether the command goes through the API.
func (a *apiFlag) set() bool { return a.addr != "" }

// apiClient calls delayd's HTTP API.
type apiClient struct {
	base  *url.URL
	token string
	hc    *http.Client
}

func (a *apiFlag) client(sys *IO, timeout time.Duration) (*apiClient, error) {
	raw := a.addr
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, usagef("--api %q: want a URL (http://127.0.0.1:8080) or host:port", a.addr)
	}
	return &apiClient{base: u, token: sys.Getenv(apiTokenVar), hc: &http.Client{Timeout: 2 * timeout}}, nil
}

// errAPINotFound is a 404 answer.
var errAPINotFound = errors.New("not found")

// get reads path (with query) into v; an error answer becomes an error
// with the API's reason.
func (c *apiClient) get(ctx context.Context, path string, q url.Values, v any) error {
	u := c.base.JoinPath(path)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("delayd api unreachable at %s (--api): %w", c.base.Host, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("delayd api at %s: %w", c.base.Host, err)
	}
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		if e.Error == "" {
			e.Error = strings.TrimSpace(string(body))
		}
		if res.StatusCode == http.StatusUnauthorized {
			e.Error += " (set " + apiTokenVar + ")"
		}
		err := fmt.Errorf("delayd api at %s: %s: %s", c.base.Host, res.Status, e.Error)
		if res.StatusCode == http.StatusNotFound {
			err = fmt.Errorf("%w: %w", errAPINotFound, err)
		}
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("delayd api at %s: answer is not the JSON expected: %w", c.base.Host, err)
	}
	return nil
}

// withAPIHint adds to a store or index that does not answer how to read
// a delayd without them (embedded mode).
func withAPIHint(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w (embedded mode has no HBase: read through delayd's HTTP API with --api, e.g. --api 127.0.0.1:8080)", err)
}
