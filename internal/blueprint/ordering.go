package blueprint

// orderingRule is one ordering rule keyed on a Component type. Position is
// judged among the entries of the same class in one lane, because that is
// how the rendered pipeline executes.
type orderingRule struct {
	Type string
	// First means the type must be the first entry of its class.
	First    bool
	FirstWhy string
	// After lists types that, when present in the lane, must come before
	// Type, each with the reason.
	After []predecessor
}

type predecessor struct {
	Type string
	Why  string
}

// orderingRules are the rules that ship. Add rules here; the judge reads
// nothing else.
var orderingRules = []orderingRule{
	{
		Type:     "memory_limiter",
		First:    true,
		FirstWhy: "it must refuse data before any other processor spends memory on it",
	},
	{
		Type: "batch",
		After: []predecessor{
			{"memory_limiter", "the memory limiter must see data before it is batched"},
			{"filter", "drop data before batching it, not after"},
			{"tail_sampling", "sample before batching, not after"},
			{"probabilistic_sampler", "sample before batching, not after"},
			{"k8sattributes", "batching loses the request context k8sattributes needs"},
		},
	},
}
