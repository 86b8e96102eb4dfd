module blockspace.exchange/deploy

go 1.26

require gopkg.in/yaml.v3 v3.0.1

replace blockspace.exchange/platform => ../platform

replace blockspace.exchange/topics => ../topics

replace blockspace.exchange/ingress => ../ingress

replace blockspace.exchange/query-api => ../query-api

replace blockspace.exchange/settler => ../settler
