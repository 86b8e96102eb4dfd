module blockspace.exchange/matcher

go 1.26.0

require (
	blockspace.exchange/platform v0.0.0-00010101000000-000000000000
	blockspace.exchange/topics v0.0.0
	github.com/shopspring/decimal v1.6.0
	github.com/twmb/franz-go v1.22.2
	github.com/twmb/franz-go/pkg/kadm v1.19.0
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/twmb/franz-go/pkg/kfake v0.0.0-20260918054303-01f206a7e32c // indirect
	github.com/twmb/franz-go/pkg/kmsg v1.15.0 // indirect
)

replace (
	blockspace.exchange/platform => ../platform
	blockspace.exchange/topics => ../topics
)
