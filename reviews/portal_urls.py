"""Provider portal routes, mounted at /portal/ by config/urls.py."""

from django.contrib.auth import views as auth_views
from django.urls import path

from reviews import portal, portal_tokens

app_name = "portal"

urlpatterns = [
    path("", portal.portal_home, name="home"),
    path("login/", portal.PortalLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="portal:login"), name="logout"),
    path("cycles/<slug:cycle_slug>/", portal.portal_cycle, name="cycle"),
    path("cycles/<slug:cycle_slug>/replies/", portal.portal_reply, name="reply"),
    path("tokens/", portal_tokens.portal_tokens, name="tokens"),
    path("tokens/<int:pk>/rotate/", portal_tokens.portal_token_rotate, name="token_rotate"),
    path("tokens/<int:pk>/revoke/", portal_tokens.portal_token_revoke, name="token_revoke"),
]
