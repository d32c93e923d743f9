package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/itchyny/gojq"
	"go.yaml.in/yaml/v3"
	"k8s.io/client-go/util/jsonpath"

	"github.com/tetherhq/tether/internal/display"
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
		tty := isTerminal(g.stdout)
		return g.convertStdout(func(w io.Writer, doc []byte) error { return runJQ(w, code, doc, tty) })
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
		tmpl.tty = isTerminal(g.stdout)
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
	if err := yaml.Unmarshal(yamlReadable(doc), &n); err != nil {
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

// yamlReadable escapes, as \uXXXX, the characters JSON leaves raw but a
// YAML reader refuses ("control characters are not allowed"): DEL, the C1
// controls other than NEL, U+FFFE and U+FFFF. JSON holds them only inside
// strings, where the escape means the same character, so the document is
// unchanged; without it one agent's error or condition holding such a
// character made -o yaml of a whole listing fail.
func yamlReadable(doc []byte) []byte {
	refused := func(r rune) bool {
		return r == 0x7f || (r >= 0x80 && r <= 0x9f && r != 0x85) || r == 0xfffe || r == 0xffff
	}
	if !bytes.ContainsFunc(doc, refused) {
		return doc
	}
	out := make([]byte, 0, len(doc)+16)
	for _, r := range string(doc) {
		if refused(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = utf8.AppendRune(out, r)
		}
	}
	return out
}

// terminalText is a string that --jq or -o jsonpath prints raw, made safe
// for a terminal: each line through display.Safe, so that escape
// sequences, C1 controls and bidi overrides an agent wrote show as text
// while a multi-line value still reads as lines. Only on a terminal: into
// a pipe or a file these print values exactly (jq -r, kubectl).
func terminalText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = display.Safe(l)
	}
	return strings.Join(lines, "\n")
}

// terminalStrings returns v, a decoded JSON document, with every string
// (and object key) passed through terminalText.
func terminalStrings(v any) any {
	switch x := v.(type) {
	case string:
		return terminalText(x)
	case []any:
		for i := range x {
			x[i] = terminalStrings(x[i])
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[terminalText(k)] = terminalStrings(e)
		}
		return out
	}
	return v
}

// runJQ writes each result of code over doc: strings as they are (like
// jq -r), other values as indented JSON. On a terminal (tty) strings are
// escaped (terminalText).
func runJQ(w io.Writer, code *gojq.Code, doc []byte, tty bool) error {
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
		if s, ok := r.(string); ok && tty {
			r = terminalText(s)
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

// --- JSONPath, as kubectl reads it ---

// jsonPath is a parsed -o jsonpath= template, evaluated by kubectl's own
// implementation (k8s.io/client-go/util/jsonpath), so that a template that
// works with kubectl -o jsonpath works here: {.field}, {[*].name},
// {range ...}{end}, filters ?(@.x=="y"), recursive descent {..name}.
type jsonPath struct {
	jp  *jsonpath.JSONPath
	tty bool // standard output is a terminal: strings are escaped (terminalText)
}

func parseJSONPath(s string) (*jsonPath, error) {
	if !strings.Contains(s, "{") {
		s = "{" + s + "}" // -o jsonpath=.id, as kubectl takes it
	}
	jp := jsonpath.New("output")
	// As kubectl's --allow-missing-template-keys (its default): a field an
	// item lacks prints nothing instead of failing the whole listing.
	jp.AllowMissingKeys(true)
	if err := jp.Parse(s); err != nil {
		return nil, err
	}
	if err := checkRanges(s); err != nil {
		return nil, err
	}
	return &jsonPath{jp: jp}, nil
}

// checkRanges refuses a template whose {range} and {end} do not pair up.
// kubectl's evaluator finds that out only on data (or not at all: an
// unclosed {range} prints its first pass), and a command that changes
// something must know its output works before it acts.
func checkRanges(template string) error {
	p, err := jsonpath.Parse("check", template)
	if err != nil {
		return err
	}
	depth := 0
	for _, n := range p.Root.Nodes {
		list, ok := n.(*jsonpath.ListNode)
		if !ok || len(list.Nodes) == 0 {
			continue
		}
		id, ok := list.Nodes[0].(*jsonpath.IdentifierNode)
		if !ok {
			continue
		}
		switch id.Name {
		case "range":
			depth++
		case "end":
			if depth--; depth < 0 {
				return errors.New("{end} without {range}")
			}
		}
	}
	if depth > 0 {
		return errors.New("{range} without {end}")
	}
	return nil
}

func (t *jsonPath) execute(w io.Writer, doc []byte) error {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return err
	}
	if t.tty {
		v = terminalStrings(v)
	}
	var out bytes.Buffer
	if err := t.jp.Execute(&out, v); err != nil {
		return fmt.Errorf("-o jsonpath: %v", err)
	}
	if out.Len() == 0 || out.Bytes()[out.Len()-1] != '\n' {
		out.WriteByte('\n') // a {range} that ends each item with {"\n"} has its own
	}
	_, err := w.Write(out.Bytes())
	return err
}
