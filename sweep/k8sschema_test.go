package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// schema is the subset of JSON Schema that testdata/k8s-job-configmap.schema.json
// uses.
type schema struct {
	Ref                  string             `json:"$ref"`
	Type                 string             `json:"type"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	AdditionalProperties json.RawMessage    `json:"additionalProperties"` // false, or a schema
	Items                *schema            `json:"items"`
	Enum                 []any              `json:"enum"`
	Minimum              *float64           `json:"minimum"`
	Maximum              *float64           `json:"maximum"`
	MaxItems             *int               `json:"maxItems"`
	Pattern              string             `json:"pattern"`
	Definitions          map[string]*schema `json:"definitions"`
}

// validate checks v (decoded with json.Number) against s, with root holding the
// definitions, and returns every violation with its path.
func (s *schema) validate(root *schema, path string, v any) []string {
	if s.Ref != "" {
		name, ok := strings.CutPrefix(s.Ref, "#/definitions/")
		d := root.Definitions[name]
		if !ok || d == nil {
			return []string{fmt.Sprintf("%s: unknown $ref %s", path, s.Ref)}
		}
		return d.validate(root, path, v)
	}
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, a...)) }
	if len(s.Enum) > 0 {
		found := false
		for _, e := range s.Enum {
			if fmt.Sprint(e) == fmt.Sprint(v) {
				found = true
			}
		}
		if !found {
			bad("%v is not one of %v", v, s.Enum)
		}
	}
	switch s.Type {
	case "":
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			bad("want an object, got %T", v)
			return errs
		}
		for _, r := range s.Required {
			if _, ok := m[r]; !ok {
				bad("required field %q is missing", r)
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, ok := s.Properties[k]; ok {
				errs = append(errs, p.validate(root, path+"."+k, m[k])...)
				continue
			}
			switch ap := bytes.TrimSpace(s.AdditionalProperties); {
			case len(ap) == 0 || string(ap) == "true":
			case string(ap) == "false":
				bad("field %q is not in the schema", k)
			default:
				var sub schema
				if err := json.Unmarshal(ap, &sub); err != nil {
					bad("schema: additionalProperties: %v", err)
					continue
				}
				errs = append(errs, sub.validate(root, path+"."+k, m[k])...)
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			bad("want an array, got %T", v)
			return errs
		}
		if s.MaxItems != nil && len(a) > *s.MaxItems {
			bad("%d items, at most %d", len(a), *s.MaxItems)
		}
		for i, x := range a {
			if s.Items != nil {
				errs = append(errs, s.Items.validate(root, fmt.Sprintf("%s[%d]", path, i), x)...)
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			bad("want a string, got %T (%v)", v, v)
			return errs
		}
		if s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString(str) {
			bad("%q does not match %s", str, s.Pattern)
		}
	case "integer":
		n, ok := v.(json.Number)
		i, err := n.Int64()
		if !ok || err != nil {
			bad("want an integer, got %T (%v)", v, v)
			return errs
		}
		if s.Minimum != nil && float64(i) < *s.Minimum {
			bad("%d is below the minimum %v", i, *s.Minimum)
		}
		if s.Maximum != nil && float64(i) > *s.Maximum {
			bad("%d is above the maximum %v", i, *s.Maximum)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("want a boolean, got %T", v)
		}
	default:
		bad("schema: unknown type %q", s.Type)
	}
	return errs
}

func loadK8sSchema(t *testing.T) *schema {
	t.Helper()
	b, err := os.ReadFile("testdata/k8s-job-configmap.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// manifestDocs decodes a multi-document YAML manifest into JSON values (json.Number
// for numbers), as the API server would read it.
func manifestDocs(t *testing.T, m string) []any {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(m))
	var docs []any
	for {
		var d any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("manifest YAML: %v", err)
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		jd := json.NewDecoder(bytes.NewReader(b))
		jd.UseNumber()
		var v any
		if err := jd.Decode(&v); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, v)
	}
	return docs
}

// The Kubernetes manifests of 'sweep plan --k8s' against the vendored schema of the
// ConfigMap and batch/v1 Job fields they use, plus the Job API's cross-field rules
// that a schema cannot say.
func TestK8sManifestSchema(t *testing.T) {
	root := loadK8sSchema(t)
	for _, opt := range []PlanOptions{
		{Name: "fig5", GridYAML: []byte("name: g\ngrid: {sigma: [1, 2]}\n"), Shards: 5, Parallelism: 2, Out: "/results", Workers: 3, Image: "ghcr.io/x/dpfil:1", GPUs: 1, Mem: "4Gi", Namespace: "ml"},
		{Name: "small", GridYAML: []byte("name: s\n"), Shards: 1, Out: "/r", Image: "dpfil", Grace: 600},
	} {
		m, err := K8sManifest(opt)
		if err != nil {
			t.Fatal(err)
		}
		docs := manifestDocs(t, m)
		if len(docs) != 2 {
			t.Fatalf("%d documents", len(docs))
		}
		for i, kind := range []string{"ConfigMap", "Job"} {
			if errs := root.Definitions[kind].validate(root, kind, docs[i]); len(errs) > 0 {
				t.Errorf("%s does not fit the schema:\n%s\n%s", kind, strings.Join(errs, "\n"), m)
			}
		}
		job := docs[1].(map[string]any)
		spec := job["spec"].(map[string]any)
		pod := spec["template"].(map[string]any)["spec"].(map[string]any)
		// Job API validation: backoffLimitPerIndex needs completionMode Indexed,
		// Indexed needs completions; podFailurePolicy needs restartPolicy Never; an
		// onExitCodes rule names an existing container and does not list 0.
		if spec["completionMode"] != "Indexed" || spec["completions"] != json.Number(fmt.Sprint(opt.Shards)) {
			t.Errorf("spec %v", spec)
		}
		if pod["restartPolicy"] != "Never" {
			t.Errorf("restartPolicy %v with a podFailurePolicy", pod["restartPolicy"])
		}
		containers := map[string]bool{}
		for _, c := range pod["containers"].([]any) {
			containers[c.(map[string]any)["name"].(string)] = true
		}
		ignoresInterrupt, ignoresDisruption := false, false
		for _, r := range spec["podFailurePolicy"].(map[string]any)["rules"].([]any) {
			rule := r.(map[string]any)
			if ec, ok := rule["onExitCodes"].(map[string]any); ok {
				if !containers[ec["containerName"].(string)] {
					t.Errorf("onExitCodes names container %v, not in the pod", ec["containerName"])
				}
				for _, v := range ec["values"].([]any) {
					if v == json.Number("0") {
						t.Error("onExitCodes with In lists 0")
					}
					if v == json.Number(fmt.Sprint(ExitInterrupted)) && rule["action"] == "Ignore" {
						ignoresInterrupt = true
					}
				}
			}
			if pc, ok := rule["onPodConditions"].([]any); ok && rule["action"] == "Ignore" && pc[0].(map[string]any)["type"] == "DisruptionTarget" {
				ignoresDisruption = true
			}
		}
		if !ignoresInterrupt || !ignoresDisruption {
			t.Errorf("podFailurePolicy does not ignore exit %d and disruptions: %v", ExitInterrupted, spec["podFailurePolicy"])
		}
		want := opt.Grace
		if want == 0 {
			want = DefaultGrace
		}
		if pod["terminationGracePeriodSeconds"] != json.Number(fmt.Sprint(want)) {
			t.Errorf("terminationGracePeriodSeconds %v, want %d", pod["terminationGracePeriodSeconds"], want)
		}
	}
}

// The validator itself: each kind of mistake in a Job is caught.
func TestK8sSchemaValidatorCatches(t *testing.T) {
	root := loadK8sSchema(t)
	m, err := K8sManifest(PlanOptions{Name: "x", GridYAML: []byte("name: x\n"), Shards: 2, Out: "/r", Image: "i"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		from, to, want string
	}{
		{"completionMode: Indexed", "completionMode: indexed", "is not one of"},
		{"completions: 2", "completions: two", "want an integer"},
		{"parallelism: 2", "parallelism: -1", "below the minimum"},
		{"restartPolicy: Never", "restartPolicy: Never\n      restartPolicies: Never", `field "restartPolicies" is not in the schema`},
		{"mountPath: /r", "mountpath: /r", `required field "mountPath" is missing`},
		{"cpu: \"1\"", "cpu: \"one\"", "does not match"},
		{"apiVersion: batch/v1", "apiVersion: batch/v2", "is not one of"},
		{"status: \"True\"", "status: \"true\"", "is not one of"},
	} {
		bad := strings.Replace(m, tc.from, tc.to, 1)
		if bad == m {
			t.Fatalf("manifest has no %q:\n%s", tc.from, m)
		}
		errs := root.Definitions["Job"].validate(root, "Job", manifestDocs(t, bad)[1])
		if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
			t.Errorf("%q → %q: errors %q, want %q", tc.from, tc.to, errs, tc.want)
		}
	}
}
