package fleet

import "testing"

func TestContainerName(t *testing.T) {
	tests := []struct {
		name    string
		d       DeploymentKey
		service string
		want    string
	}{
		// Pinned: a release that changed these would rename, and so replace, every container of the fleet.
		{"pinned team-a/web", DeploymentKey{Namespace: "team-a", Name: "web"}, "app", "iot-team-a-web-app-a6d68893"},
		{"pinned default/hello-world", DeploymentKey{Namespace: "default", Name: "hello-world"}, "nginx", "iot-default-hello-world-nginx-e79d9388"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ContainerName(tt.d, tt.service); got != tt.want {
				t.Errorf("ContainerName(%v, %q) = %q, want %q", tt.d, tt.service, got, tt.want)
			}
		})
	}
}

func TestDeploymentHashPinned(t *testing.T) {
	tests := []struct {
		d    DeploymentKey
		want string
	}{
		{DeploymentKey{Namespace: "team-a", Name: "web"}, "a6d68893"},
		{DeploymentKey{Namespace: "team", Name: "a-web"}, "2ead2c86"},
		{DeploymentKey{Namespace: "default", Name: "hello-world"}, "e79d9388"},
	}
	for _, tt := range tests {
		if got := DeploymentHash(tt.d); got != tt.want {
			t.Errorf("DeploymentHash(%v) = %q, want %q (the hash is part of every container's name: it must not change)", tt.d, got, tt.want)
		}
	}
}

// TestContainerNamesDoNotCollide: deployments whose namespace, name and service read the same once joined
// by dashes get different containers; the readable part alone would collide.
func TestContainerNamesDoNotCollide(t *testing.T) {
	tests := []struct {
		name     string
		a, b     DeploymentKey
		sa, sb   string
		readable string
	}{
		{"namespace and name split differently", DeploymentKey{"team-a", "web"}, DeploymentKey{"team", "a-web"}, "app", "app", "iot-team-a-web-app"},
		{"name and service split differently", DeploymentKey{"team", "web"}, DeploymentKey{"team", "web-x"}, "x-app", "app", "iot-team-web-x-app"},
		{"all three split differently", DeploymentKey{"a-b", "c"}, DeploymentKey{"a", "b-c"}, "d", "d", "iot-a-b-c-d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The control: without the hash the two would be one container.
			ra := "iot-" + tt.a.Namespace + "-" + tt.a.Name + "-" + tt.sa
			rb := "iot-" + tt.b.Namespace + "-" + tt.b.Name + "-" + tt.sb
			if ra != tt.readable || rb != tt.readable {
				t.Fatalf("the case does not collide without the hash: %q, %q", ra, rb)
			}
			na, nb := ContainerName(tt.a, tt.sa), ContainerName(tt.b, tt.sb)
			if na == nb {
				t.Errorf("%v/%s and %v/%s share the container %q", tt.a, tt.sa, tt.b, tt.sb, na)
			}
			if ContainerName(tt.a, tt.sa) != na {
				t.Errorf("ContainerName is not stable for %v", tt.a)
			}
		})
	}
}
