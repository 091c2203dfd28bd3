// Command promql-names parses PromQL expressions with Prometheus' own parser and prints the metric names
// each selects. test/alerts runs it on every alert and dashboard expression, so the operator's module does
// not depend on Prometheus (docs/metrics.md, "Checking the names").
//
// Input on stdin: a JSON array of expressions. Output on stdout: a JSON array of the same length, each
// {"names": [...]} with the sorted, distinct metric names the expression selects, or {"error": "..."} when
// it does not parse or selects a series without naming its metric (a bare {job="x"} would match any name,
// which no check could vouch for).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type result struct {
	Names []string `json:"names,omitempty"`
	Error string   `json:"error,omitempty"`
}

func main() {
	var exprs []string
	if err := json.NewDecoder(os.Stdin).Decode(&exprs); err != nil {
		fmt.Fprintln(os.Stderr, "promql-names: stdin is not a JSON array of strings:", err)
		os.Exit(2)
	}
	p := parser.NewParser(parser.Options{})
	out := make([]result, len(exprs))
	for i, e := range exprs {
		names, err := metricNames(p, e)
		if err != nil {
			out[i].Error = err.Error()
			continue
		}
		out[i].Names = names
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "promql-names:", err)
		os.Exit(1)
	}
}

// metricNames returns the names of every vector and matrix selector in expr.
func metricNames(p parser.Parser, expr string) ([]string, error) {
	ast, err := p.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	var errs []error
	parser.Inspect(ast, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		if name == "" {
			for _, m := range vs.LabelMatchers {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
		}
		if name == "" {
			errs = append(errs, fmt.Errorf("selector %s names no metric", vs))
			return nil
		}
		names = append(names, name)
		return nil
	})
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
