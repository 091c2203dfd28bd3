package admit

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Validator is a validating webhook of one kind, T (a pointer to the API type): it decides on typed
// objects, and Typed makes it the admission.CustomValidator controller-runtime's webhook builder takes.
type Validator[T runtime.Object] interface {
	ValidateCreate(ctx context.Context, obj T) (admission.Warnings, error)
	ValidateUpdate(ctx context.Context, oldObj, newObj T) (admission.Warnings, error)
	ValidateDelete(ctx context.Context, obj T) (admission.Warnings, error)
}

// Typed is v as an admission.CustomValidator: the decoded object is handed to v as a T, and an object of
// another type (which the API server does not send to a webhook registered for T's kind) is refused with
// an error naming both types, without calling v.
func Typed[T runtime.Object](v Validator[T]) admission.CustomValidator { return typed[T]{v: v} }

type typed[T runtime.Object] struct{ v Validator[T] }

func (t typed[T]) ValidateCreate(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	o, err := as[T](obj)
	if err != nil {
		return nil, err
	}
	return t.v.ValidateCreate(ctx, o)
}

func (t typed[T]) ValidateUpdate(ctx context.Context, oldObj, newObj runtime.Object) (admission.Warnings, error) {
	o, err := as[T](oldObj)
	if err != nil {
		return nil, err
	}
	n, err := as[T](newObj)
	if err != nil {
		return nil, err
	}
	return t.v.ValidateUpdate(ctx, o, n)
}

func (t typed[T]) ValidateDelete(ctx context.Context, obj runtime.Object) (admission.Warnings, error) {
	o, err := as[T](obj)
	if err != nil {
		return nil, err
	}
	return t.v.ValidateDelete(ctx, o)
}

func as[T runtime.Object](obj runtime.Object) (T, error) {
	o, ok := obj.(T)
	if !ok {
		return o, fmt.Errorf("expected %T, got %T", o, obj)
	}
	return o, nil
}
