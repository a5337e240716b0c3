package suite

import (
	"testing"
	"time"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// CheckCAChain checks that a rendered serving certificate is signed by a CA
// Issuer whose CA is a self-signed, long-lived Certificate of the bundle:
// self-signed Issuer → CA Certificate (isCA) → CA Issuer → serving
// Certificate. The CA injector then puts that CA, not the leaf, into the
// webhook configurations, and a renewal of the serving certificate leaves
// their CA bundle as it is.
func CheckCAChain(t testing.TB, objs []*unstructured.Unstructured, serving *certmanagerv1.Certificate) {
	t.Helper()
	if serving.Spec.IsCA {
		t.Errorf("serving Certificate %s is a CA", serving.Name)
	}
	if serving.Spec.IssuerRef.Kind != "Issuer" {
		t.Fatalf("serving Certificate issuerRef %+v, want an Issuer of the bundle", serving.Spec.IssuerRef)
	}
	caIssuer := Named[certmanagerv1.Issuer](t, objs, "Issuer", serving.Spec.IssuerRef.Name)
	if caIssuer.Spec.CA == nil || caIssuer.Spec.SelfSigned != nil {
		t.Fatalf("Issuer %s of the serving certificate: %+v, want a CA Issuer", caIssuer.Name, caIssuer.Spec.IssuerConfig)
	}
	var ca *certmanagerv1.Certificate
	for _, o := range Find(objs, "Certificate") {
		if c := Decode[certmanagerv1.Certificate](t, o); c.Spec.SecretName == caIssuer.Spec.CA.SecretName {
			ca = c
		}
	}
	if ca == nil {
		t.Fatalf("no Certificate writes Secret %s, the CA of Issuer %s", caIssuer.Spec.CA.SecretName, caIssuer.Name)
	}
	if !ca.Spec.IsCA || ca.Spec.Duration == nil || ca.Spec.Duration.Duration < 365*24*time.Hour {
		t.Errorf("CA Certificate %s: isCA %v, duration %v; want a CA of at least a year", ca.Name, ca.Spec.IsCA, ca.Spec.Duration)
	}
	if ca.Spec.IssuerRef.Kind != "Issuer" {
		t.Fatalf("CA Certificate issuerRef %+v, want the bundle's self-signed Issuer", ca.Spec.IssuerRef)
	}
	if root := Named[certmanagerv1.Issuer](t, objs, "Issuer", ca.Spec.IssuerRef.Name); root.Spec.SelfSigned == nil {
		t.Errorf("Issuer %s of the CA: %+v, want a self-signed Issuer", root.Name, root.Spec.IssuerConfig)
	}
}
