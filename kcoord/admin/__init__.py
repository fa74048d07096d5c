"""The HTTP admin endpoint (`--http`): the server (`http`), its group routes (`routes`),
Prometheus metrics (`metrics`), and the container health check (`healthcheck`)."""
