"""Reviews API routes, mounted under /api/v1/ by config/api.py."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from reviews.api import views

router = SimpleRouter()
router.register("conflicts", views.ConflictViewSet, basename="conflict")
router.register("assignments", views.AssignmentViewSet, basename="assignment")
router.register("reconciliations", views.ReconciliationViewSet, basename="reconciliation")
router.register("overrides", views.OverrideViewSet, basename="override")
router.register("feedback-imports", views.FeedbackImportViewSet, basename="feedback-import")
router.register("interview-notes", views.InterviewNoteViewSet, basename="interview-note")
router.register("replies", views.ReplyViewSet, basename="reply")
router.register("audit-events", views.AuditEventViewSet, basename="audit-event")

urlpatterns = [
    path("agreement/<slug:cycle_slug>/", views.AgreementView.as_view(), name="review-agreement"),
    *router.urls,
]
