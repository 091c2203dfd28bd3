package apply

import (
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Holds says whether the live object already holds every field of desired (Contains), so that applying
// desired would change nothing; false when either cannot be converted.
func Holds(live, desired client.Object) bool {
	l, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return false
	}
	d, err := ToUnstructured(desired)
	if err != nil {
		return false
	}
	return Contains(l, d.Object)
}

// Contains reports whether live holds every field of want with an equal value: maps may carry extra keys
// (server defaults, other managers' fields), lists must have the same length and match element by
// element, and a zero scalar or empty collection in want matches an absent field in live, because typed
// structs serialise fields we never set as zero values.
func Contains(live, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return live == nil && isZero(w)
		}
		for k, wv := range w {
			lv, present := l[k]
			if !present {
				if isZero(wv) {
					continue
				}
				return false
			}
			if !Contains(lv, wv) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok {
			return live == nil && len(w) == 0
		}
		if len(l) != len(w) {
			return false
		}
		for i := range w {
			if !Contains(l[i], w[i]) {
				return false
			}
		}
		return true
	case nil:
		return true
	default:
		if live == nil {
			return isZero(want)
		}
		return scalarEqual(live, want)
	}
}

func isZero(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	case string:
		return t == ""
	case bool:
		return !t
	case int64:
		return t == 0
	case float64:
		return t == 0
	default:
		return false
	}
}

func scalarEqual(a, b any) bool {
	if a == b {
		return true
	}
	// JSON numbers can surface as int64 on one side and float64 on the other.
	fa, aok := toFloat(a)
	fb, bok := toFloat(b)
	if aok && bok {
		return fa == fb
	}
	return false
}

func toFloat(v any) (float64, bool) {
	switch t := v.(type) {
	case int64:
		return float64(t), true
	case int32:
		return float64(t), true
	case int:
		return float64(t), true
	case float64:
		return t, true
	default:
		return 0, false
	}
}
