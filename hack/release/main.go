// Command release builds the release artefacts of `make image` and
// `make release` (docs/install.md). It is a build tool, not shipped.
//
//	release image     -version V -commit C -created EPOCH -source URL -platforms linux/amd64,linux/arm64 -binaries DIR -out FILE.oci.tar
//	release binary    -version V -commit C -package ./cmd/kubectl-dynamic -platform linux/amd64 -out FILE
//	release chart     -version V -created EPOCH -chart DIR -repository REPO -image FILE.oci.tar -out DIR
//	release install   -repository REPO -tag TAG -config DIR -image FILE.oci.tar -out FILE
//	release sbom      -version V -created EPOCH -source URL -out FILE BINARY...
//	release validate-sbom -image FILE.oci.tar SBOM BINARY...
//	release plugin-archive -created EPOCH -binary FILE -license FILE -out FILE.tar.gz
//	release krew      -version V -template plugins/dynamic.yaml -dir DIR -out FILE
//	release checksums -dir DIR
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dynamicingress/dynamic-ingress-operator/hack/release/internal/release"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: release image|binary|chart|install|sbom|validate-sbom|plugin-archive|krew|checksums [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "release %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func run(ctx context.Context, command string, args []string) error {
	fs := flag.NewFlagSet(command, flag.ExitOnError)
	var (
		version   = fs.String("version", "", "the release version, x.y.z")
		commit    = fs.String("commit", "", "the git commit")
		created   = fs.String("created", "0", "every timestamp, in seconds since the epoch (SOURCE_DATE_EPOCH)")
		source    = fs.String("source", "https://"+release.ModulePath, "the source repository's URL")
		out       = fs.String("out", "", "the file or directory to write")
		platforms = fs.String("platforms", "linux/amd64,linux/arm64", "image: the platforms")
		binaries  = fs.String("binaries", "", "image: where to keep the manager binaries (default: a temporary directory)")
		pkg       = fs.String("package", "./cmd", "binary: the Go package to build")
		platform  = fs.String("platform", "linux/amd64", "binary: the platform")
		chartDir  = fs.String("chart", "charts/dynamic-ingress-operator", "chart: the chart directory")
		repo      = fs.String("repository", "dynamic-ingress-operator", "chart, install: the manager image's repository")
		tag       = fs.String("tag", "", "install: the manager image's tag")
		archive   = fs.String("image", "", "chart, install: the image's OCI archive (make image), whose index digest pins the image")
		configDir = fs.String("config", "config", "install: the kustomize tree")
		dir       = fs.String("dir", "dist", "checksums, krew: the directory (krew: of the plugin's archives)")
		binary    = fs.String("binary", "", "plugin-archive: the kubectl-dynamic binary")
		license   = fs.String("license", "LICENSE", "plugin-archive: the license file")
		krewTmpl  = fs.String("template", "plugins/dynamic.yaml", "krew: the krew manifest template")
	)
	_ = fs.Parse(args)
	epoch, err := strconv.ParseInt(*created, 10, 64)
	if err != nil {
		return fmt.Errorf("-created %q is not seconds since the epoch", *created)
	}
	createdAt := time.Unix(epoch, 0).UTC()
	stamp := release.Stamp{Version: *version, Commit: *commit}
	switch command {
	case "image":
		return image(ctx, *platforms, *binaries, *out, release.ImageOptions{Stamp: stamp, Source: *source, Created: createdAt})
	case "binary":
		ps, err := release.ParsePlatforms(*platform)
		if err != nil {
			return err
		}
		return release.Build(ctx, ".", *pkg, ps[0], stamp, *out)
	case "chart":
		ref, err := pinnedImage(*repo, *version, *archive)
		if err != nil {
			return err
		}
		path, err := release.PackageChart(*chartDir, ref, createdAt, *out)
		if err == nil {
			fmt.Printf("Wrote %s for image %s\n", path, ref)
		}
		return err
	case "install":
		ref, err := pinnedImage(*repo, *tag, *archive)
		if err != nil {
			return err
		}
		yaml, err := release.InstallYAML(*configDir, ref)
		if err != nil {
			return err
		}
		fmt.Printf("Wrote %s for image %s\n", *out, ref)
		return os.WriteFile(*out, yaml, 0o644)
	case "sbom":
		var bins []release.Binary
		for _, path := range fs.Args() {
			bin, err := release.ReadBinary(path)
			if err != nil {
				return err
			}
			bins = append(bins, bin)
		}
		doc, err := release.SBOM(release.SBOMOptions{Version: *version, Source: *source, Created: createdAt}, bins...)
		if err != nil {
			return err
		}
		fmt.Printf("Wrote %s: %d binaries\n", *out, len(bins))
		return os.WriteFile(*out, doc, 0o644)
	case "validate-sbom":
		return validateSBOM(*archive, fs.Args())
	case "plugin-archive":
		if err := release.WritePluginArchive(*binary, *license, createdAt, *out); err != nil {
			return err
		}
		fmt.Println("Wrote", *out)
		return nil
	case "krew":
		tmpl, err := os.ReadFile(*krewTmpl)
		if err != nil {
			return err
		}
		manifest, err := release.KrewManifest(tmpl, *version, *dir)
		if err != nil {
			return err
		}
		fmt.Printf("Wrote %s for kubectl-dynamic v%s\n", *out, *version)
		return os.WriteFile(*out, manifest, 0o644)
	case "checksums":
		return release.WriteChecksums(*dir)
	default:
		return fmt.Errorf("unknown command")
	}
}

// validateSBOM validates the SBOM args[0] (release.ValidateSBOM) and checks
// that it describes exactly what the release ships: the manager of every
// platform in the image archive and the binaries args[1:], each with its
// SHA-256.
func validateSBOM(archive string, args []string) error {
	if len(args) == 0 || archive == "" {
		return errors.New("usage: release validate-sbom -image FILE.oci.tar SBOM BINARY (more binaries may follow)")
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	doc, err := release.ValidateSBOM(data)
	if err != nil {
		return fmt.Errorf("%s is not a valid SPDX 2.3 document:\n%w", args[0], err)
	}
	dir, err := os.MkdirTemp("", "validate-sbom-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	shipped, err := release.ArchiveManagers(archive, dir)
	if err != nil {
		return err
	}
	for _, path := range args[1:] {
		f, err := release.FileSHA256(path)
		if err != nil {
			return err
		}
		shipped = append(shipped, f)
	}
	if err := release.CheckSBOMDescribes(doc, shipped); err != nil {
		return fmt.Errorf("%s does not describe what the release ships:\n%w", args[0], err)
	}
	fmt.Printf("%s: a valid SPDX 2.3 document (spdx tools-golang's reader and validation, and the SPDX 2.3 checks of release.ValidateSBOM); it describes the %d shipped binaries with their SHA-256 and %d packages in all\n",
		args[0], len(shipped), len(doc.Packages))
	return nil
}

// pinnedImage is repository:tag@digest, the digest that of the image index
// in the OCI archive make image wrote: install.yaml and the chart name the
// image of the same build.
func pinnedImage(repository, tag, archive string) (release.ImageRef, error) {
	if tag == "" || archive == "" {
		return release.ImageRef{}, fmt.Errorf("the image needs a tag and its archive (-image FILE.oci.tar), to pin its digest")
	}
	digest, err := release.ArchiveIndexDigest(archive)
	if err != nil {
		return release.ImageRef{}, err
	}
	return release.ImageRef{Repository: repository, Tag: tag, Digest: digest.String()}, nil
}

// image builds the manager for every platform, the image index from the
// binaries, and the OCI archive, and prints the index's digest.
func image(ctx context.Context, platforms, binDir, out string, o release.ImageOptions) error {
	ps, err := release.ParsePlatforms(platforms)
	if err != nil {
		return err
	}
	if binDir == "" {
		if binDir, err = os.MkdirTemp("", "manager-"); err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(binDir) }()
	}
	for _, p := range ps {
		bin := filepath.Join(binDir, "manager-"+p.OS+"-"+p.Arch)
		if err := release.Build(ctx, ".", "./cmd", p, o.Stamp, bin); err != nil {
			return err
		}
		o.Managers = append(o.Managers, release.PlatformBinary{Platform: p, Path: bin})
	}
	idx, err := release.Image(o)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := release.WriteOCIArchive(idx, o.Stamp.Version, o.Created, out); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	info, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Printf("Wrote %s (%d bytes): image index %s for %s\n", out, info.Size(), digest, platforms)
	return nil
}
