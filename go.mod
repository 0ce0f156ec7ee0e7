module github.com/runc-userns/runc-userns

go 1.26.8

require (
	github.com/moby/sys/mountinfo v0.7.3
	github.com/moby/sys/userns v0.1.0
	github.com/opencontainers/runtime-spec v1.2.1
	github.com/sirupsen/logrus v1.10.2
	github.com/urfave/cli/v2 v2.27.7
	golang.org/x/sys v0.49.0
)

require (
	github.com/cpuguy83/go-md2man/v2 v2.0.7 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/xrash/smetrics v0.0.0-20240521201337-686a1a2994c1 // indirect
)
