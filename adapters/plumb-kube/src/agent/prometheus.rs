//! The member's Prometheus instant-query client (being built): `GET /api/v1/query`, a timeout,
//! and the answer as the member report reads it.
