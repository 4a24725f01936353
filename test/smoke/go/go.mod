module chatapp.local/smoke

go 1.24.0

require chatapp.local/clients v0.0.0

require (
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/oapi-codegen/runtime v1.8.0 // indirect
)

// The generated module (npm run clients:go), never published.
replace chatapp.local/clients => ../../../clients/go
