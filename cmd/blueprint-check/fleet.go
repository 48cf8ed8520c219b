package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/myriarch/myriarch/internal/adminclient"
	"github.com/myriarch/myriarch/internal/blueprint"
	"github.com/myriarch/myriarch/internal/configrender"
)

// fleetFindings checks the fleet's Blueprint (as loaded from the roots)
// against what its collectors' contexts hold today: each reference none of
// them can resolve is a variable finding.
func fleetFindings(est *blueprint.Estate, fleet string, client func() (*adminclient.Client, error)) ([]blueprint.Finding, error) {
	cl, err := client()
	if err != nil {
		return nil, err
	}
	r, err := cl.API.GetFleetVariablesWithResponse(context.Background(), fleet)
	if err != nil {
		return nil, err
	}
	fv := r.JSON200
	bp, ok := est.Blueprints[fv.Blueprint]
	if !ok {
		return nil, fmt.Errorf("the fleet is configured with Blueprint %s, which the roots do not hold", fv.Blueprint)
	}
	tm, err := configrender.Compile(est, fv.Blueprint, blueprint.GitHistory{})
	if err != nil {
		return nil, fmt.Errorf("Blueprint %s does not compile: %w", fv.Blueprint, err)
	}
	var out []blueprint.Finding
	for _, r := range tm.References() {
		resolvable := false
		var names []string
		for _, a := range r.Alts {
			if a.Const {
				resolvable = true
				break
			}
			name := strings.Join(a.Path, ".")
			names = append(names, name)
			if fv.Variables[name] > 0 {
				resolvable = true
				break
			}
		}
		if resolvable {
			continue
		}
		out = append(out, blueprint.Finding{Kind: blueprint.KindVariable, Blueprint: fv.Blueprint, Lane: "fleet " + fleet, Owner: bp.Owner,
			Message: fmt.Sprintf("no member of fleet %s (%d collectors) can resolve %s today: none has %s", fleet, fv.Members, r.Source,
				strings.Join(names, " or "))})
	}
	return out, nil
}
