module blockspace.exchange/matcher

go 1.26

require (
	blockspace.exchange/topics v0.0.0
	github.com/shopspring/decimal v1.6.0
)

replace (
	blockspace.exchange/platform => ../platform
	blockspace.exchange/topics => ../topics
)
