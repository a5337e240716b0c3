package probe

import "github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"

// HeadersOf are the headers of a probe, a served check or a sink as the
// prober sends them: a literal value, or a Secret's key in
// secretNamespace.
func HeadersOf(secretNamespace string, headers []v1beta1.HTTPHeader) []Header {
	out := make([]Header, 0, len(headers))
	for _, h := range headers {
		header := Header{Name: h.Name, Value: h.Value}
		if h.ValueFrom != nil {
			ref := h.ValueFrom.SecretKeyRef
			header = Header{Name: h.Name, FromSecret: &SecretKey{Namespace: secretNamespace, Name: ref.Name, Key: ref.Key}}
		}
		out = append(out, header)
	}
	return out
}
