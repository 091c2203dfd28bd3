package manager

import (
	"errors"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

// Protobuf on the wire (docs/performance.md, "Round three: idle operator and protobuf").
//
// controller-runtime already picks the content type per kind when the rest.Config leaves ContentType
// empty (pkg/client/apiutil createRestConfig): protobuf for the kinds client-go's scheme knows (the
// built-in ones: their lists, watches, gets, creates and updates, through the client and the cache's
// informers), JSON for custom resources, which the API server cannot serve as protobuf, and for apply
// configurations and unstructured objects. A ContentType set on the whole config would override that per
// kind choice and send protobuf for custom resources too, so New refuses one.
//
// What controller-runtime builds as a plain typed clientset, from the config as given, speaks JSON: its
// event sink among them, the one client that writes for every change the operator makes. New gives a
// caller's EventBroadcaster a sink that speaks protobuf (events are built-in: core/v1 Event).

// ProtobufConfig is a copy of cfg for a client of built-in kinds only: it sends protobuf and accepts
// protobuf, or JSON where the server has no protobuf for an answer.
func ProtobufConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return c
}

// errContentType is New's answer to a config whose ContentType is set.
var errContentType = errors.New("manager: leave the rest.Config's ContentType empty: controller-runtime then speaks protobuf for built-in kinds and JSON for custom resources, which have no protobuf")

// protobufEvents is an EventBroadcaster that records to a protobuf sink of its own, whatever sink it is
// asked to record to: controller-runtime's recorder provider hands it a JSON sink made from the manager's
// config. Its client shares the manager's HTTP client (set by New once the manager exists, before anything
// records), so no connection is added.
type protobufEvents struct {
	record.EventBroadcaster
	cfg        *rest.Config
	httpClient *http.Client
}

func (b *protobufEvents) StartRecordingToSink(given record.EventSink) watch.Interface {
	events, err := corev1client.NewForConfigAndClient(ProtobufConfig(b.cfg), b.httpClient)
	if err != nil {
		// Only a config no client could use fails here, and the manager's own clients would have failed
		// first; the given sink is then the one that works.
		return b.EventBroadcaster.StartRecordingToSink(given)
	}
	return b.EventBroadcaster.StartRecordingToSink(&corev1client.EventSinkImpl{Interface: events.Events("")})
}
