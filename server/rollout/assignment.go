package rollout

import "github.com/myriarch/myriarch/server/admin"

// Assignment is a member's fleet as the agents API shows it: the fleet,
// its target version, and why no fleet could be assigned (nil: none).
type Assignment struct {
	Fleet         *string `json:"fleet"`
	TargetVersion *string `json:"targetVersion"`
	Error         *string `json:"error"`
}

// WriteFields implements admin.FieldWriter.
func (a Assignment) WriteFields(o *admin.Object) {
	o.StringPtr("fleet", a.Fleet)
	o.StringPtr("targetVersion", a.TargetVersion)
	o.StringPtr("error", a.Error)
}
