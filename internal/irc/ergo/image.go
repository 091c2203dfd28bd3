package ergo

import (
	"strings"
)

// datastoreSchemas is the datastore schema each ergo release writes and requires: latestDbSchema in
// ergo's irc/database.go at the release's tag (read at every v2.x.y tag up to v2.19.1). A release opens
// only a datastore of its own schema; an older one it upgrades only with datastore.autoupgrade. Release
// candidates are left out: their tags are read as unknown, which rolls as any unknown image does.
var datastoreSchemas = map[string]int{
	"v2.0.0": 10,
	"v2.1.0": 11,
	"v2.2.0": 12, "v2.3.0": 12,
	"v2.4.0": 18,
	"v2.5.0": 20, "v2.5.1": 20, "v2.6.0": 20, "v2.6.1": 20, "v2.7.0": 20,
	"v2.8.0": 22, "v2.9.0": 22, "v2.9.1": 22, "v2.10.0": 22, "v2.11.0": 22, "v2.11.1": 22,
	"v2.12.0": 23, "v2.13.0": 23, "v2.13.1": 23, "v2.14.0": 23,
	// v2.15.0 added the web push signing key (schemaChangeV23ToV24); nothing since changed the schema.
	"v2.15.0": 24, "v2.16.0": 24, "v2.17.0": 24, "v2.18.0": 24, "v2.19.0": 24, "v2.19.1": 24,
}

// ImageVersion is the ergo release an image reference names, "" when it names none the operator knows.
// It reads the tag ("ghcr.io/ergochat/ergo:v2.14.0", also with a digest after it, or without the v),
// whatever the registry, so a mirror of ergo's images is read as ergo's; the operator's own DefaultImage
// is DefaultImageVersion even once make pin-images has turned it into a digest. A digest alone, a moving
// tag ("stable", "latest") or a release the table does not list is unknown.
func ImageVersion(image string) string {
	if image == DefaultImage {
		return DefaultImageVersion
	}
	if at := strings.Index(image, "@"); at >= 0 {
		image = image[:at]
	}
	colon := strings.LastIndex(image, ":")
	if colon < 0 || colon < strings.LastIndex(image, "/") {
		return ""
	}
	tag := image[colon+1:]
	if !strings.HasPrefix(tag, "v") {
		tag = "v" + tag
	}
	if _, ok := datastoreSchemas[tag]; !ok {
		return ""
	}
	return tag
}

// ImageChoice is which ergo image a network's Deployment gets, and why.
type ImageChoice struct {
	// Image is the image to run: the target, or the running one while the datastore needs an upgrade
	// the network has not allowed.
	Image string
	// Held is true when Image is the running image kept instead of the target.
	Held bool
	// Running and Target are the ergo releases of the running and the target image ("" when unknown),
	// RunningSchema and TargetSchema their datastore schemas (0 when unknown).
	Running, Target             string
	RunningSchema, TargetSchema int
}

// ChooseImage decides the image of a network whose Deployment runs running ("" when there is no
// Deployment yet) when the operator's image is target (DefaultImage when empty): target, unless both are ergo releases the operator
// knows, running's datastore schema is older than target's and autoUpgrade is off. Then target would
// refuse the datastore and crash-loop, so running is kept: the network keeps serving until its owner
// allows the upgrade. A new network, an image of unknown version (a digest alone, a custom tag) and a
// target of the same or an older schema get target, as they always did.
func ChooseImage(running, target string, autoUpgrade bool) ImageChoice {
	if target == "" {
		target = DefaultImage
	}
	c := ImageChoice{Image: target, Running: ImageVersion(running), Target: ImageVersion(target)}
	c.RunningSchema = datastoreSchemas[c.Running]
	c.TargetSchema = datastoreSchemas[c.Target]
	if running == "" || running == target || autoUpgrade || c.Running == "" || c.Target == "" {
		return c
	}
	if c.RunningSchema < c.TargetSchema {
		c.Image, c.Held = running, true
	}
	return c
}
