package blueprint

import (
	"errors"
	"maps"
	"slices"
)

// ErrUnknownBlueprint is returned for a Blueprint id the estate lacks.
var ErrUnknownBlueprint = errors.New("blueprint: no such Blueprint")

// BlueprintIDs returns the ids of every loaded Blueprint, sorted.
func (est *Estate) BlueprintIDs() []string { return slices.Sorted(maps.Keys(est.Blueprints)) }

// ComponentIDs returns the ids of every loaded shared Component, sorted.
func (est *Estate) ComponentIDs() []string { return slices.Sorted(maps.Keys(est.Components)) }

// RequirementIDs returns the ids of every loaded Requirement, sorted.
func (est *Estate) RequirementIDs() []string { return slices.Sorted(maps.Keys(est.Requirements)) }
