package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/itchyny/gojq"
	"go.yaml.in/yaml/v3"
)

// Output formats (-o), as kubectl and gh name them:
//
//	table            aligned columns for people (the default)
//	wide             the table with more columns, where a command has them
//	json             the stable, scriptable document
//	yaml             the same document as YAML
//	jsonpath=TMPL    fields picked from the document: {.id}, {[*].name},
//	                 {range [*]}{.id}{"\n"}{end}
//	--jq EXPR        the document filtered by a jq expression (gojq)
//
// Commands only know table and json: every other format is the JSON they
// print, converted on its way to standard output (formatWriter). So every
// command that has -o json has them all, --follow streams included (one
// converted document per JSON value).

// outputHelp is -o's flag help.
const outputHelp = "output format: table, wide, json, yaml, or jsonpath=TEMPLATE (with --jq EXPR: jq over the JSON)"

// setupOutput checks -o and --jq, leaves g.output as the "table" or "json"
// the commands test for, and installs the converter for the other formats.
func setupOutput(g *globals) error {
	raw := strings.TrimSpace(g.output)
	name, arg, hasArg := strings.Cut(raw, "=")
	switch {
	case g.jq != "" && raw != "json" && raw != "table":
		return usagef("--jq filters the JSON output: leave out -o %s", raw)
	case g.jq != "":
		q, err := gojq.Parse(g.jq)
		if err != nil {
			return usagef("--jq %q: %v", g.jq, err)
		}
		code, err := gojq.Compile(q)
		if err != nil {
			return usagef("--jq %q: %v", g.jq, err)
		}
		g.output = "json"
		return g.convertStdout(func(w io.Writer, doc []byte) error { return runJQ(w, code, doc) })
	case raw == "table" || raw == "json":
		return nil
	case raw == "wide":
		g.output, g.wide = "table", true
		return nil
	case raw == "yaml":
		g.output = "json"
		docs := 0
		return g.convertStdout(func(w io.Writer, doc []byte) error {
			if docs++; docs > 1 { // a stream (--follow): one YAML document each
				if _, err := io.WriteString(w, "---\n"); err != nil {
					return err
				}
			}
			return writeYAML(w, doc)
		})
	case name == "jsonpath" && strings.TrimSpace(arg) == "":
		return usagef("-o jsonpath= needs a template, e.g. -o 'jsonpath={.id}'")
	case name == "jsonpath" && hasArg:
		tmpl, err := parseJSONPath(arg)
		if err != nil {
			return usagef("-o jsonpath=%s: %v", arg, err)
		}
		g.output = "json"
		return g.convertStdout(func(w io.Writer, doc []byte) error { return tmpl.execute(w, doc) })
	}
	return usagef("output format %q (--output) is not one of table, wide, json, yaml, jsonpath=TEMPLATE", raw)
}

// convertStdout puts a converter between the commands and standard output:
// each JSON value they write is passed to convert; text that is not JSON
// passes through unchanged. finishOutput waits for it.
func (g *globals) convertStdout(convert func(w io.Writer, doc []byte) error) error {
	pr, pw := io.Pipe()
	out := g.stdout
	done := make(chan error, 1)
	go func() {
		err := convertStream(g, out, pr, convert)
		pr.CloseWithError(err) // unblocks a writer if conversion stopped early
		done <- err
	}()
	g.stdout = pw
	g.finishOutput = func() error {
		pw.Close()
		return <-done
	}
	return nil
}

func convertStream(g *globals, out io.Writer, in io.Reader, convert func(io.Writer, []byte) error) error {
	w := bufio.NewWriter(out)
	defer w.Flush()
	dec := json.NewDecoder(in)
	dec.UseNumber()
	for {
		var doc json.RawMessage
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			// Not JSON (a message for people): the rest goes out as it is.
			if _, err := io.Copy(w, io.MultiReader(dec.Buffered(), in)); err != nil {
				return err
			}
			return nil
		}
		if err := convert(w, doc); err != nil {
			if !g.mutated {
				return err
			}
			// The change is made and this answer is its only record:
			// print it as it is, then fail.
			if _, werr := w.Write(append(indentedJSON(doc), '\n')); werr != nil {
				return werr
			}
			return fmt.Errorf("%w; the change was made, so its whole answer is printed above", err)
		}
		// Streams (--follow) show each value as it comes.
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

// indentedJSON is doc indented as printJSON prints, or doc as it is.
func indentedJSON(doc []byte) []byte {
	var b bytes.Buffer
	if err := json.Indent(&b, doc, "", "  "); err != nil {
		return doc
	}
	return b.Bytes()
}

// writeYAML writes one JSON document as a YAML document, keeping the order
// of its fields (JSON is YAML: parsed into nodes, then printed in block
// style).
func writeYAML(w io.Writer, doc []byte) error {
	var n yaml.Node
	if err := yaml.Unmarshal(doc, &n); err != nil {
		return err
	}
	var block func(*yaml.Node)
	block = func(n *yaml.Node) {
		n.Style = 0
		for _, c := range n.Content {
			block(c)
		}
	}
	block(&n)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return err
	}
	return enc.Close()
}

// runJQ writes each result of code over doc: strings as they are (like
// jq -r), other values as indented JSON.
func runJQ(w io.Writer, code *gojq.Code, doc []byte) error {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return err
	}
	iter := code.Run(v)
	for {
		r, ok := iter.Next()
		if !ok {
			return nil
		}
		if err, isErr := r.(error); isErr {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				return nil
			}
			return fmt.Errorf("--jq: %v", err)
		}
		if err := writeValue(w, r, true); err != nil {
			return err
		}
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
}

// writeValue writes a string as it is and anything else as JSON.
func writeValue(w io.Writer, v any, indent bool) error {
	if s, ok := v.(string); ok {
		_, err := io.WriteString(w, s)
		return err
	}
	var b []byte
	var err error
	if indent {
		b, err = json.MarshalIndent(v, "", "  ")
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// --- JSONPath, the subset kubectl users write ---

// jsonPath is a parsed -o jsonpath= template: literal text, {path} fields,
// {"text"} literals, and {range path}...{end} loops.
type jsonPath struct{ nodes []jpNode }

type jpNode struct {
	text  string    // literal text (when path is nil and body is nil)
	path  []jpStep  // a field to print
	body  *jsonPath // a {range path} loop over path's values
	isLit bool
}

// jpStep is one step of a path: a field name, an index, or every element.
type jpStep struct {
	field string
	index int
	all   bool
	isIdx bool
}

func parseJSONPath(s string) (*jsonPath, error) {
	if !strings.Contains(s, "{") {
		s = "{" + s + "}" // -o jsonpath=.id
	}
	t, _, closed, err := parseJPNodes(s)
	if err != nil {
		return nil, err
	}
	if closed {
		return nil, fmt.Errorf("{end} without {range}")
	}
	return t, nil
}

// parseJPNodes parses s up to its end or up to an {end}; closed says which,
// and rest is what follows the {end}.
func parseJPNodes(s string) (t *jsonPath, rest string, closed bool, err error) {
	t = &jsonPath{}
	for s != "" {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			t.nodes = append(t.nodes, jpNode{text: s, isLit: true})
			break
		}
		if open > 0 {
			t.nodes = append(t.nodes, jpNode{text: s[:open], isLit: true})
		}
		end := strings.IndexByte(s[open:], '}')
		if end < 0 {
			return nil, "", false, fmt.Errorf("unclosed {")
		}
		expr := strings.TrimSpace(s[open+1 : open+end])
		s = s[open+end+1:]
		switch {
		case expr == "end":
			return t, s, true, nil
		case strings.HasPrefix(expr, "range "):
			path, err := parseJPPath(strings.TrimSpace(strings.TrimPrefix(expr, "range ")))
			if err != nil {
				return nil, "", false, err
			}
			body, after, closed, err := parseJPNodes(s)
			if err != nil {
				return nil, "", false, err
			}
			if !closed {
				return nil, "", false, fmt.Errorf("{range} without {end}")
			}
			s = after
			t.nodes = append(t.nodes, jpNode{path: path, body: body})
		case strings.HasPrefix(expr, `"`):
			var lit string
			if err := json.Unmarshal([]byte(expr), &lit); err != nil {
				return nil, "", false, fmt.Errorf("the literal %s is not a quoted string", expr)
			}
			t.nodes = append(t.nodes, jpNode{text: lit, isLit: true})
		default:
			path, err := parseJPPath(expr)
			if err != nil {
				return nil, "", false, err
			}
			t.nodes = append(t.nodes, jpNode{path: path})
		}
	}
	return t, "", false, nil
}

func parseJPPath(expr string) ([]jpStep, error) {
	expr = strings.TrimPrefix(expr, "$")
	var steps []jpStep
	for expr != "" {
		switch {
		case strings.HasPrefix(expr, "["):
			end := strings.IndexByte(expr, ']')
			if end < 0 {
				return nil, fmt.Errorf("unclosed [ in %q", expr)
			}
			in := strings.TrimSpace(expr[1:end])
			expr = expr[end+1:]
			switch {
			case in == "*":
				steps = append(steps, jpStep{all: true})
			case strings.HasPrefix(in, "'") || strings.HasPrefix(in, `"`):
				steps = append(steps, jpStep{field: strings.Trim(in, `'"`)})
			default:
				var n int
				if _, err := fmt.Sscanf(in, "%d", &n); err != nil {
					return nil, fmt.Errorf("[%s] is not an index, [*] or ['field']", in)
				}
				steps = append(steps, jpStep{index: n, isIdx: true})
			}
		case strings.HasPrefix(expr, "."):
			expr = expr[1:]
			if expr == "" {
				break
			}
			if strings.HasPrefix(expr, "*") {
				steps = append(steps, jpStep{all: true})
				expr = expr[1:]
				continue
			}
			n := strings.IndexAny(expr, ".[")
			if n < 0 {
				n = len(expr)
			}
			if n == 0 {
				if strings.HasPrefix(expr, ".") {
					return nil, fmt.Errorf("recursive descent (..) is not supported")
				}
				continue
			}
			steps = append(steps, jpStep{field: expr[:n]})
			expr = expr[n:]
		default:
			return nil, fmt.Errorf("%q: a path starts with . or [", expr)
		}
	}
	return steps, nil
}

// eval returns the values path selects in v.
func jpEval(v any, path []jpStep) []any {
	cur := []any{v}
	for _, st := range path {
		var next []any
		for _, c := range cur {
			switch {
			case st.all:
				switch x := c.(type) {
				case []any:
					next = append(next, x...)
				case map[string]any:
					for _, e := range x {
						next = append(next, e)
					}
				}
			case st.isIdx:
				if l, ok := c.([]any); ok {
					i := st.index
					if i < 0 {
						i += len(l)
					}
					if i >= 0 && i < len(l) {
						next = append(next, l[i])
					}
				}
			default:
				if m, ok := c.(map[string]any); ok {
					if e, ok := m[st.field]; ok {
						next = append(next, e)
					}
				}
			}
		}
		cur = next
	}
	return cur
}

func (t *jsonPath) execute(w io.Writer, doc []byte) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	lw := &lastByteWriter{w: w}
	if err := t.run(lw, v); err != nil {
		return err
	}
	if lw.last == '\n' {
		return nil // a {range} that ends each item with {"\n"}
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// lastByteWriter remembers the last byte written through it.
type lastByteWriter struct {
	w    io.Writer
	last byte
}

func (l *lastByteWriter) Write(p []byte) (int, error) {
	if len(p) > 0 {
		l.last = p[len(p)-1]
	}
	return l.w.Write(p)
}

func (t *jsonPath) run(w io.Writer, v any) error {
	for _, n := range t.nodes {
		switch {
		case n.isLit:
			if _, err := io.WriteString(w, n.text); err != nil {
				return err
			}
		case n.body != nil:
			for _, e := range jpEval(v, n.path) {
				if err := n.body.run(w, e); err != nil {
					return err
				}
			}
		default:
			for i, e := range jpEval(v, n.path) {
				if i > 0 {
					if _, err := io.WriteString(w, " "); err != nil {
						return err
					}
				}
				if err := writeValue(w, e, false); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
