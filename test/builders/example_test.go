package builders_test

import (
	"fmt"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/api/v1beta1"
	"github.com/dynamicingress/dynamic-ingress-operator/test/builders"
)

func ExampleDynamicIngress() {
	di := builders.DynamicIngress("shop", "storefront").State("killswitch").ExpectCode("503").
		FailurePolicy(v1beta1.FailurePolicyRetain).
		Passive(builders.IngressTo("shop.example.com", "web").Label("app", "web")).
		Active(builders.IngressTo("shop.example.com", "sorry").Annotation("mode", "sorry").ClassName("nginx"))
	fmt.Print(di.YAML())
	// Output:
	// apiVersion: ingress.dynamicingress.io/v1beta1
	// kind: DynamicIngress
	// metadata:
	//   name: storefront
	//   namespace: shop
	// spec:
	//   activeIngress:
	//     template:
	//       metadata:
	//         annotations:
	//           mode: sorry
	//       spec:
	//         ingressClassName: nginx
	//         rules:
	//         - host: shop.example.com
	//           http:
	//             paths:
	//             - backend:
	//                 service:
	//                   name: sorry
	//                   port:
	//                     number: 80
	//               path: /
	//               pathType: Prefix
	//   expected:
	//     statusCode: "503"
	//   failurePolicy: Retain
	//   passiveIngress:
	//     template:
	//       metadata:
	//         labels:
	//           app: web
	//       spec:
	//         rules:
	//         - host: shop.example.com
	//           http:
	//             paths:
	//             - backend:
	//                 service:
	//                   name: web
	//                   port:
	//                     number: 80
	//               path: /
	//               pathType: Prefix
	//   state: killswitch
	//   target:
	//     name: storefront
	// status: {}
}

func ExampleProbedState() {
	s := builders.ProbedState("shop", "flag", "https://flags.example.com/x").
		Interval(10*time.Second).Timeout(2*time.Second).FailureThreshold(3).Header("Accept", "text/plain")
	fmt.Print(s.YAML())
	// Output:
	// apiVersion: ingress.dynamicingress.io/v1beta1
	// kind: DynamicIngressState
	// metadata:
	//   name: flag
	//   namespace: shop
	// spec:
	//   probe:
	//     failureThreshold: 3
	//     headers:
	//     - name: Accept
	//       value: text/plain
	//     interval: 10s
	//     timeout: 2s
	//     url: https://flags.example.com/x
	// status: {}
}

func ExampleDynamicHTTPRoute() {
	dhr := builders.DynamicHTTPRoute("shop", "storefront").State("killswitch").ExpectBody("down").
		BodyMatch(v1beta1.BodyMatchContains).
		Active(builders.RedirectTo("shop.example.com", "status.example.com"))
	fmt.Println(*dhr.Obj().Spec.ActiveRoute.Template.Spec.Rules[0].Filters[0].RequestRedirect.Hostname)
	fmt.Println(dhr.Obj().Spec.PassiveRoute == nil, *dhr.Obj().Spec.Expected.Body)
	// Output:
	// status.example.com
	// true down
}

func ExampleScheduleState() {
	s := builders.ScheduleState("shop", "maintenance").TimeZone("Asia/Tokyo").
		Cron("0 2 * * 0", time.Hour).OneOff("2026-12-24T00:00:00+09:00", "2026-12-26T00:00:00+09:00").Obj()
	fmt.Println(s.Spec.Schedule.TimeZone, len(s.Spec.Schedule.Windows), s.Spec.Schedule.Windows[0].Duration.Duration)
	// Output:
	// Asia/Tokyo 2 1h0m0s
}
