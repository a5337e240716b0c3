package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// sample is one line of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// metrics is a scrape, possibly restricted to some metric families.
type metrics []sample

// parseMetrics reads the Prometheus text exposition format, keeping the
// samples whose name starts with one of prefixes (all when none).
func parseMetrics(text string, prefixes []string) metrics {
	var out metrics
	for _, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if len(prefixes) > 0 {
			keep := false
			for _, p := range prefixes {
				if strings.HasPrefix(line, p) {
					keep = true
					break
				}
			}
			if !keep {
				continue
			}
		}
		s, ok := parseSample(line)
		if ok {
			out = append(out, s)
		}
	}
	return out
}

func parseSample(line string) (sample, bool) {
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, false
	}
	s.name = line[:i]
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, ", ")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.IndexByte(rest, '=')
			if eq < 0 || eq+1 >= len(rest) || rest[eq+1] != '"' {
				return s, false
			}
			key := rest[:eq]
			rest = rest[eq+2:]
			var val strings.Builder
			j := 0
			for ; j < len(rest); j++ {
				c := rest[j]
				if c == '\\' && j+1 < len(rest) {
					j++
					switch rest[j] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(rest[j])
					}
					continue
				}
				if c == '"' {
					break
				}
				val.WriteByte(c)
			}
			if j >= len(rest) {
				return s, false
			}
			s.labels[key] = val.String()
			rest = rest[j+1:]
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return s, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, false
	}
	s.value = v
	return s, true
}

// sum adds the samples of a name whose labels include all of match.
func (m metrics) sum(name string, match map[string]string) float64 {
	total := 0.0
	for _, s := range m {
		if s.name != name || !labelsMatch(s.labels, match) {
			continue
		}
		total += s.value
	}
	return total
}

func labelsMatch(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// histogram is the cumulative buckets of one histogram (summed over the
// series that match), with its sum and count.
type histogram struct {
	buckets map[float64]float64 // upper bound -> cumulative count
	sum     float64
	count   float64
}

func (m metrics) histogram(name string, match map[string]string) histogram {
	h := histogram{buckets: map[float64]float64{}}
	for _, s := range m {
		if !labelsMatch(s.labels, match) {
			continue
		}
		switch s.name {
		case name + "_bucket":
			le, err := strconv.ParseFloat(s.labels["le"], 64)
			if err != nil {
				le = math.Inf(1)
			}
			h.buckets[le] += s.value
		case name + "_sum":
			h.sum += s.value
		case name + "_count":
			h.count += s.value
		}
	}
	return h
}

func (h histogram) sub(before histogram) histogram {
	out := histogram{buckets: map[float64]float64{}, sum: h.sum - before.sum, count: h.count - before.count}
	for le, v := range h.buckets {
		out.buckets[le] = v - before.buckets[le]
	}
	return out
}

func (h histogram) mean() float64 {
	if h.count == 0 {
		return 0
	}
	return h.sum / h.count
}

// scrapeURL reads a metrics endpoint over plain HTTP (the manager's).
func scrapeURL(ctx context.Context, url string, prefixes []string) (metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return parseMetrics(string(raw), prefixes), nil
}

// apiserverPrefixes are the families the bench reads from kube-apiserver.
var apiserverPrefixes = []string{"apiserver_request_total", "apiserver_request_duration_seconds_sum", "apiserver_request_duration_seconds_count"}

// apiserverMetrics reads kube-apiserver's /metrics with the admin client.
func (h *harness) apiserverMetrics(ctx context.Context) (metrics, error) {
	raw, err := h.cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("GET /metrics from kube-apiserver: %w", err)
	}
	return parseMetrics(string(raw), apiserverPrefixes), nil
}

// requestKey groups API requests: verb, resource[/subresource], code.
type requestKey struct {
	verb, resource, code string
}

// requests counts API requests seen by kube-apiserver by requestKey.
type requests map[requestKey]float64

// writeVerbs are the verbs that change something.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

func requestCounts(m metrics) requests {
	out := requests{}
	for _, s := range m {
		if s.name != "apiserver_request_total" || s.labels["dry_run"] != "" {
			continue
		}
		res := s.labels["resource"]
		if sub := s.labels["subresource"]; sub != "" {
			res += "/" + sub
		}
		out[requestKey{verb: s.labels["verb"], resource: res, code: s.labels["code"]}] += s.value
	}
	return out
}

func (r requests) sub(before requests) requests {
	out := requests{}
	for k, v := range r {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// ownLeases is what kube-apiserver writes by itself (its identity lease,
// every 10s); the manager runs without leader election and writes none.
const ownLeases = "leases"

// writes sums the write requests, optionally of one resource ("" = all but
// kube-apiserver's own lease renewals).
func (r requests) writes(resource string) float64 {
	total := 0.0
	for k, v := range r {
		if writeVerbs[k.verb] && (resource == "" && k.resource != ownLeases || k.resource == resource) {
			total += v
		}
	}
	return total
}

// code sums the requests answered with one HTTP code.
func (r requests) code(code string) float64 {
	total := 0.0
	for k, v := range r {
		if k.code == code {
			total += v
		}
	}
	return total
}

// writeSummary lists the write requests as "VERB resource: n" by count.
func (r requests) writeSummary() string {
	byVR := map[string]float64{}
	for k, v := range r {
		if writeVerbs[k.verb] && k.resource != ownLeases {
			byVR[k.verb+" "+k.resource] += v
		}
	}
	keys := make([]string, 0, len(byVR))
	for k := range byVR {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if byVR[keys[i]] != byVR[keys[j]] {
			return byVR[keys[i]] > byVR[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %g", k, byVR[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// serverLatency is the mean server-side duration of the requests of a verb
// and resource between two scrapes.
func serverLatency(before, after metrics, verb, resource, subresource string) (mean float64, count float64) {
	match := map[string]string{"verb": verb, "resource": resource, "subresource": subresource}
	sum := after.sum("apiserver_request_duration_seconds_sum", match) - before.sum("apiserver_request_duration_seconds_sum", match)
	count = after.sum("apiserver_request_duration_seconds_count", match) - before.sum("apiserver_request_duration_seconds_count", match)
	if count == 0 {
		return 0, 0
	}
	return sum / count, count
}
