"""SavedModel export for TF Serving."""
