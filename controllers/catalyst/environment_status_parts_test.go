package catalyst

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/catalyst/catalysttest"
)

// statusManagers are, by field manager, the status fields each owns on env as the API server records them
// (the status subresource's managedFields entries, flattened to their keys: "f:build",
// "k:{\"type\":\"Ready\"}").
func statusManagers(env *catalystv1.Environment) map[string]string {
	GinkgoHelper()
	out := map[string]string{}
	for _, e := range env.ManagedFields {
		if e.Subresource != "status" || e.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		Expect(json.Unmarshal(e.FieldsV1.Raw, &fields)).To(Succeed())
		status, _ := fields["f:status"].(map[string]any)
		var keys []string
		for k, v := range status {
			keys = append(keys, k)
			if sub, ok := v.(map[string]any); ok && k == "f:conditions" {
				for ck := range sub {
					keys = append(keys, ck)
				}
			}
		}
		out[e.Manager] += strings.Join(keys, " ")
	}
	return out
}

var _ = Describe("Environment status writer", func() {
	It("writes every part's status once, under one field manager", func(ctx SpecContext) {
		t := newTeam(ctx)
		direct, err := client.NewWithWatch(testEnv.Config, client.Options{Scheme: k8s.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		w, err := direct.Watch(ctx, &catalystv1.EnvironmentList{}, client.InNamespace(t.envNS))
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()

		// A Project that does not exist: one reconcile sets every part (the namespace, the Ingress, the
		// build and the deploy all wait for it) and then the Environment waits.
		env := catalysttest.Environment(t.envNS, "parts", t.name, "missing")
		Expect(k8s.Create(ctx, env)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getEnv(ctx, env)
			g.Expect(condition(g, got, catalystv1.ConditionReady).Reason).To(Equal(catalystv1.ReasonProjectNotFound))
			g.Expect(condition(g, got, catalystv1.ConditionBuildReady).Reason).To(Equal(catalystv1.ReasonWaiting))
			g.Expect(condition(g, got, catalystv1.ConditionDeploymentReady).Reason).To(Equal(catalystv1.ReasonWaiting))
		}).Should(Succeed())
		got := getEnv(ctx, env)

		managers := statusManagers(got)
		Expect(managers).To(HaveLen(1), "the status has one field manager: %v", managers)
		owned := managers[environmentFieldOwner]
		for _, c := range readyParts {
			Expect(owned).To(ContainSubstring(`k:{"type":"`+c+`"}`), "the writer owns %s", c)
		}
		Expect(owned).To(ContainSubstring(`k:{"type":"Ready"}`))
		Expect(owned).To(ContainSubstring("f:observedGeneration"))

		// The status changed once: one write, where a writer per part made three. Read the watch up to
		// the resourceVersion the Environment has now.
		var (
			last    *catalystv1.Environment
			changes int
		)
		Eventually(func() string {
			for {
				select {
				case e := <-w.ResultChan():
					if e.Type != watch.Added && e.Type != watch.Modified {
						continue
					}
					o := e.Object.(*catalystv1.Environment)
					if o.Name != env.Name {
						continue
					}
					if last != nil && !equality.Semantic.DeepEqual(last.Status, o.Status) {
						changes++
					}
					last = o
				default:
					if last == nil {
						return ""
					}
					return last.ResourceVersion
				}
			}
		}).Should(Equal(got.ResourceVersion))
		Expect(changes).To(Equal(1), "status writes of one reconcile of a new Environment")
	})

	It("gives every status field one part", func() {
		fields := slices.Concat(environmentFields, buildFields, deployFields)
		var want []string
		typ := reflect.TypeFor[catalystv1.EnvironmentStatus]()
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name != "conditions" {
				want = append(want, name)
			}
		}
		slices.Sort(fields)
		slices.Sort(want)
		Expect(fields).To(Equal(want), "a status field nobody owns is never written; one two parts own is written twice")
		conds := slices.Concat(environmentConditions, buildConditions, deployConditions)
		Expect(slices.Compact(slices.Sorted(slices.Values(conds)))).To(HaveLen(len(conds)))
		for _, c := range readyParts {
			Expect(conds).To(ContainElement(c))
		}
	})
})
