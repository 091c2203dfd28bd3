// Package catalysttest holds the catalyst fixtures every test layer shares (builders' tests, the envtest
// suite, e2e and the demo): a Project and a pull-request Environment; the stand-in for cert-manager, which
// test clusters do not run, is internal/testutil/standin's. It imports no other package of this module but
// the API types and standin (a leaf).
package catalysttest

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	catalystv1 "github.com/platform-operator/platform-operator/api/catalyst/v1alpha1"
	"github.com/platform-operator/platform-operator/internal/testutil/standin"
)

// Issuer is the ClusterIssuer the fixtures' Projects name.
const Issuer = "selfsigned"

// Project is the reference's Project in team namespace ns: a Helm chart from github.com/org/repo, a
// quota of 1 CPU and 2Gi, hosts under preview.example.com signed by the Issuer ClusterIssuer.
func Project(ns, name string) *catalystv1.Project {
	return &catalystv1.Project{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: catalystv1.ProjectSpec{
			Source:     catalystv1.ProjectSource{RepositoryURL: "https://github.com/org/repo", Branch: "main"},
			Deployment: catalystv1.ProjectDeployment{Type: catalystv1.DeploymentHelm, Path: "./charts/app"},
			Resources: catalystv1.ProjectResources{DefaultQuota: catalystv1.Quota{
				CPU: ptr.To(resource.MustParse("1")), Memory: ptr.To(resource.MustParse("2Gi"))}},
			Ingress: &catalystv1.ProjectIngress{Domain: "preview.example.com",
				IssuerRef: &catalystv1.IssuerRef{Name: Issuer, Kind: "ClusterIssuer"}},
		},
	}
}

// Environment is a pull-request Environment of project (in team namespace team) living in namespace
// ns, labelled the way the web application labels it, except that the branch label holds feature-login:
// the reference's feature/login is not a valid label value, and the API server refuses it.
func Environment(ns, name, team, project string) *catalystv1.Environment {
	return &catalystv1.Environment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			catalystv1.LabelTeam: team, catalystv1.LabelProject: project,
			catalystv1.LabelEnvironment: name, catalystv1.LabelBranch: "feature-login",
		}, Annotations: map[string]string{catalystv1.AnnotationEnvironmentID: "env-" + name}},
		Spec: catalystv1.EnvironmentSpec{
			ProjectRef: catalystv1.ProjectReference{Name: project},
			Type:       catalystv1.EnvironmentDevelopment,
			Source:     catalystv1.EnvironmentSource{CommitSHA: "a1b2c3d4e5f6", Branch: "feature/login", PRNumber: 123},
			Config:     catalystv1.EnvironmentConfig{EnvVars: []catalystv1.EnvVar{{Name: "DEBUG", Value: "true"}}},
		},
	}
}

// MarkCertificateReady is standin.MarkCertificateReady.
var MarkCertificateReady = standin.MarkCertificateReady
