package postgres

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// AllNamespaces in an allow-list lets every namespace use a shared server.
const AllNamespaces = "*"

// NamespaceAllowed says whether an object in namespace ns may use a server whose admin credentials live
// in namespace home (a PostgresConnection's, or the Secret of --soju-database-secret): home always may,
// any other namespace only when allowed lists it or AllNamespaces. An empty list is home only: admin
// credentials are shared across namespaces only when their owner says so.
func NamespaceAllowed(home, ns string, allowed []string) bool {
	return ns == home || slices.Contains(allowed, ns) || slices.Contains(allowed, AllNamespaces)
}

// ParseNamespaces reads a comma-separated allow-list of namespaces (a flag's value): namespace names, or
// AllNamespaces alone. Spaces around names and empty entries are ignored; empty is an empty list.
func ParseNamespaces(list string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" || slices.Contains(out, n) {
			continue
		}
		if n != AllNamespaces {
			if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
				return nil, fmt.Errorf("%q is not a namespace name: %s", n, strings.Join(errs, "; "))
			}
		}
		out = append(out, n)
	}
	if len(out) > 1 && slices.Contains(out, AllNamespaces) {
		return nil, fmt.Errorf("%q: %s allows every namespace and cannot be listed with names", list, AllNamespaces)
	}
	return out, nil
}
