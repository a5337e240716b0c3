package main

import (
	"context"
	"fmt"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/internal/controlplane"
)

// The sample DynamicHTTPRoute behind Traefik's Gateway API provider: its
// GatewayClass and Gateway, the Service the route sends to, and the patch
// that puts the route there with spec.served.

// routeHost is the host the demo gives the sample DynamicHTTPRoute's
// route, so that Traefik serves it beside the storefront's Ingress (one
// host served by both would be either's).
const routeHost = "gateway.shop.example.com"

// routeStorefrontIP is the ClusterIP of the Service the route sends to: an
// address of the local control plane's loopback Service range
// (controlplane.ServiceCIDR), where a copy of the storefront listens.
const routeStorefrontIP = "127.0.1.10"

// routeRedirect is where the sample route's active shape redirects, as
// Traefik writes the Location (the filter sets no scheme: the request's).
const routeRedirect = "//status.example.com/sorry"

// gatewayManifest is Traefik's GatewayClass, the Gateway "public" the
// sample route names, listening on Traefik's port, and the Service the
// route sends to: Traefik's Gateway API provider refuses ExternalName
// Services, so it is a ClusterIP Service whose ClusterIP is the loopback
// address the storefront's copy listens on, with Traefik's native load
// balancing (Traefik sends to the ClusterIP and the Service's port).
func (d *dataPlane) gatewayManifest() string {
	return fmt.Sprintf(`apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: traefik
spec:
  controllerName: %s
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata:
  name: public
spec:
  gatewayClassName: traefik
  listeners:
  - {name: web, port: %d, protocol: HTTP}
---
apiVersion: v1
kind: Service
metadata:
  name: storefront-gateway
  annotations:
    traefik.io/service.nativelb: "true"
spec:
  clusterIP: %s
  ports:
  - {name: http, port: %d}
`, controlplane.TraefikGatewayController, d.traefik.Port(), routeStorefrontIP, d.routeStorefront.port)
}

// routePatch gives the sample DynamicHTTPRoute's two shapes the host
// routeHost and its passive shape the Service storefront-gateway, and sets
// spec.served: Traefik's address with that host, the redirect (302) while
// active, the storefront (200) while passive.
func (d *dataPlane) routePatch() string {
	return fmt.Sprintf(`[
 {"op":"replace","path":"/spec/passiveRoute/template/spec/hostnames/0","value":%[1]q},
 {"op":"replace","path":"/spec/passiveRoute/template/spec/rules/0/backendRefs/0/name","value":"storefront-gateway"},
 {"op":"replace","path":"/spec/passiveRoute/template/spec/rules/0/backendRefs/0/port","value":%[2]d},
 {"op":"replace","path":"/spec/activeRoute/template/spec/hostnames/0","value":%[1]q},
 {"op":"add","path":"/spec/served","value":{"url":%[3]q,"headers":[{"name":"Host","value":%[1]q}],
  "active":{"statusCode":"302"},"passive":{"statusCode":"200","body":"Storefront","bodyMatch":"Contains"},
  "period":"250ms","timeout":"1m"}}
]`, routeHost, d.routeStorefront.port, d.url())
}

// routeAccepted is the route's generation and what its parent (Traefik's
// Gateway) says of it.
var routeAccepted = []string{"get", "-n", namespace, "httproute", "storefront-route", "-o",
	`custom-columns=NAME:.metadata.name,GENERATION:.metadata.generation,PARENT:.status.parents[0].parentRef.name,ACCEPTED:.status.parents[0].conditions[?(@.type=="Accepted")].status,OF-GENERATION:.status.parents[0].conditions[?(@.type=="Accepted")].observedGeneration`}

// serveRoute puts the sample DynamicHTTPRoute behind Traefik's Gateway and
// has the operator check its flips there.
func serveRoute(k *kubectl, d *dataPlane) error {
	fmt.Println()
	say("Traefik also serves Gateway API: its GatewayClass, the Gateway public that the sample route names")
	say("(listening on Traefik's port), and the storefront again on %s behind a ClusterIP Service:", routeStorefrontIP)
	if err := k.showApply(d.gatewayManifest(), ""); err != nil {
		return err
	}
	say("The route gets its own host (%s), the Service, and spec.served. A route is served once", routeHost)
	say("the URL answers as the shape and its Gateway accepted the route's generation the operator wrote:")
	if err := k.show("patch", "-n", namespace, "dhr", "storefront-route", "--type", "json", "-p", d.routePatch()); err != nil {
		return err
	}
	if err := k.waitQuiet("--for=condition=Served", "dhr/storefront-route"); err != nil {
		return err
	}
	if err := k.show(routeAccepted...); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := d.getHost(ctx, routeHost)
	fmt.Println()
	say("curl -H 'Host: %s' %s   ->  %s", routeHost, d.url(), a)
	if a.err != nil || a.first != storefrontPage {
		return fmt.Errorf("through Traefik's Gateway the route answered %s, want 200 %q", a, storefrontPage)
	}
	return nil
}
